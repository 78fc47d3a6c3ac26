// Node module hooks for loading a project's route files when the framework runs from its sources
// (the test suite; a built framework bundles route files instead). Runs in Node's loader thread,
// so plain JS.
// - `foundry` resolves to the running framework, so a project needs no install to import it.
// - a bare specifier the project cannot resolve (e.g. `effect`) falls back to the framework's own
//   dependencies, so route files and the runtime share one copy of Effect.
// - a `?foundry-gen=N` query on a route file is carried to every project file it imports, so a
//   reload re-evaluates the project's module graph while the framework and packages stay loaded.
let entryUrl = ""
let frameworkUrl = ""

export async function initialize(data) {
  entryUrl = data.entryUrl
  frameworkUrl = data.frameworkUrl
}

const isBare = (specifier) => !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier)

const generationOf = (url) => (url ? /[?&]foundry-gen=(\d+)/.exec(url)?.[1] : undefined)

const isProjectFile = (url) =>
  url.startsWith("file:") && !url.includes("/node_modules/") && !url.startsWith(frameworkUrl + "src/")

// Route files are ES modules whatever the project's package.json says: without `"type": "module"`
// Node (and tsx) would load a `.ts` file as CommonJS, whose `require` never reaches these hooks.
const projectFormat = (resolved) => /\.(c[jt]s|json)(\?|$)/.test(resolved.url) ? resolved.format : "module"

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "foundry") return { url: entryUrl, format: "module", shortCircuit: true }
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
