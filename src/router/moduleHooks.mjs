// Node module hooks for loading a project's route files (runs in Node's loader thread, so plain JS).
// - `foundry` resolves to the running framework, so a project needs no install to import it.
// - when the framework runs built, `effect` and `effect/*` resolve to the framework's bundled copy
//   from any importer (route files and the packages they use), so there is one Effect runtime;
//   from sources, a bare specifier the project cannot resolve falls back to the framework's own
//   dependencies, with the same result.
// - a `?foundry-gen=N` query on a route file is carried to every project file it imports, so a
//   reload re-evaluates the project's module graph while the framework and packages stay loaded.
let entryUrl = ""
let frameworkUrl = ""
let vendorUrl

export async function initialize(data) {
  entryUrl = data.entryUrl
  frameworkUrl = data.frameworkUrl
  vendorUrl = data.vendorUrl
}

const isBare = (specifier) => !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier)

const generationOf = (url) => (url ? /[?&]foundry-gen=(\d+)/.exec(url)?.[1] : undefined)

const isProjectFile = (url) =>
  url.startsWith("file:") && !url.includes("/node_modules/") && !url.startsWith(frameworkUrl + "src/") &&
  !url.startsWith(frameworkUrl + "dist/")

/** `effect` -> `<vendor>/effect/index.js`, `effect/Schema` -> `<vendor>/effect/Schema.js`. */
const vendored = (specifier) => {
  if (vendorUrl === undefined) return undefined
  if (specifier === "effect") return `${vendorUrl}effect/index.js`
  if (specifier.startsWith("effect/") && /^effect\/[A-Za-z]+$/.test(specifier)) return `${vendorUrl}${specifier}.js`
  return undefined
}

// Route files are ES modules whatever the project's package.json says: without `"type": "module"`
// Node (and tsx) would load a `.ts` file as CommonJS, whose `require` never reaches these hooks.
const projectFormat = (resolved) => /\.(c[jt]s|json)(\?|$)/.test(resolved.url) ? resolved.format : "module"

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "foundry") return { url: entryUrl, format: "module", shortCircuit: true }
  const vendor = vendored(specifier)
  if (vendor !== undefined) return { url: vendor, format: "module", shortCircuit: true }
  let resolved
  try {
    resolved = await nextResolve(specifier, context)
  } catch (error) {
    if (!isBare(specifier) || context.parentURL?.startsWith(frameworkUrl)) throw error
    resolved = await nextResolve(specifier, { ...context, parentURL: frameworkUrl + "package.json" })
  }
  const generation = generationOf(context.parentURL) ?? generationOf(resolved.url)
  if (generation === undefined || !isProjectFile(resolved.url)) return resolved
  return { ...resolved, url: `${resolved.url.split("?")[0]}?foundry-gen=${generation}`, format: projectFormat(resolved) }
}
