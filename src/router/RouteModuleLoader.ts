/**
 * Loads route files as ES modules through Node's own loader (with `tsx` for TypeScript), so that
 * tests, `foundry dev` and `foundry start` load a project the same way, and a reload re-evaluates
 * the project's files without restarting the process.
 */
import { createRequire, register } from "node:module"
import { pathToFileURL } from "node:url"
import { register as registerTsx } from "tsx/esm/api"
import { packageLayout } from "../packageLayout.js"

let registered = false

/** Installs the TypeScript loader and Foundry's module hooks once per process. */
export const registerRouteLoader = (): void => {
  if (registered) return
  registered = true
  registerTsx()
  register(packageLayout.hooksUrl, {
    data: {
      entryUrl: packageLayout.entryUrl,
      frameworkUrl: pathToFileURL(`${packageLayout.root}/`).href,
      vendorUrl: packageLayout.vendorDir === undefined ? undefined : pathToFileURL(`${packageLayout.vendorDir}/`).href
    }
  })
}

const loaded: unknown = createRequire(import.meta.url)(packageLayout.nativeImportFile)
const nativeImport = (specifier: string): Promise<unknown> => {
  if (typeof loaded !== "object" || loaded === null || !("nativeImport" in loaded) || typeof loaded.nativeImport !== "function") {
    return Promise.reject(new Error(`foundry: ${packageLayout.nativeImportFile} is missing or broken`))
  }
  return Promise.resolve(loaded.nativeImport(specifier))
}

/** Imports one route file as of build `generation`; a new generation re-evaluates project files. */
export const importRouteModule = (file: string, generation: number): Promise<unknown> => {
  registerRouteLoader()
  return nativeImport(`${pathToFileURL(file).href}?foundry-gen=${generation}`)
}
