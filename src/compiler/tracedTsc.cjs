// tsc that knows when it would only repeat itself: `node tracedTsc.cjs <parent pid> <record> <build
// info> <tsc arguments>`. A check that passes writes down, in `<record>`, every question tsc asked
// the file system and the answer it got: each file it read (route files, helpers, the config, the
// tsconfig, every package.json and declaration a lookup went through) as a digest of the bytes it
// read, each path it asked about as a file or a folder, each real path behind a symlink, each
// folder listing (include globs, type lookups). The next check asks those questions again, with
// TypeScript's own functions, and when every answer is the same (and TypeScript and the arguments
// too) the verdict is the one recorded: it exits with `reusedStatus` without running tsc. Anything
// that cannot be asked or read means "run tsc". Recorded from the very bytes tsc read, a file saved
// while tsc ran never passes for content tsc did not see. The build info is left out: it makes tsc
// faster, it never changes the verdict.
//
// `node tracedTsc.cjs --serve <the same arguments>` is the same check kept running for `foundry
// dev`: each line on stdin asks for a check (`{"id": n}`), each line on stdout answers one (`{"id":
// n, "status": ..., "output": ...}`) with a check made after it was asked. Each check is a new
// program (its configuration, file lists and module lookups asked again, and recorded as above),
// but a file whose text and parse options are those of a file parsed before is that parsed and
// bound file again: the 190,000 lines of declarations a project is checked against are parsed once
// per `foundry dev`, not at each save.
//
// TypeScript's 9 MB compiled at each start took a third of a second, as much again as a record's
// answer: it is compiled with V8's code cache for it, made after a check (the compiler's functions
// compiled by then) and kept under the user's cache folder, one per TypeScript (by its source's
// digest) and V8, for every project. V8 refuses a cache made of another source or by another V8
// (it then compiles as without one); a missing or refused cache is made again.
"use strict"
const { createHash, randomUUID } = require("node:crypto")
const fs = require("node:fs")
const Module = require("node:module")
const os = require("node:os")
const { basename, dirname, isAbsolute, join, resolve } = require("node:path")
const { createInterface } = require("node:readline")
const vm = require("node:vm")

const typescriptFile = require.resolve("typescript")

const digest = (bytes) => createHash("sha256").update(bytes).digest("hex")

/**
 * Writes the bytes `make` gives to `path` whole (a file beside it, renamed over it), or not at all:
 * what cannot be written is left as it was, and the file beside it removed. The file is opened
 * before `make` runs, so a folder that cannot be written costs no more than the attempt.
 */
const writeWhole = (path, make) => {
  const temporary = `${path}.${randomUUID()}.tmp`
  try {
    const file = fs.openSync(temporary, "wx")
    try {
      fs.writeFileSync(file, make())
    } finally {
      fs.closeSync(file)
    }
    fs.renameSync(temporary, path)
    removeLeftovers(path)
  } catch {
    try {
      fs.rmSync(temporary, { force: true })
    } catch {
      // Left behind, it is only a file that nothing reads.
    }
  }
}

/** How old a file beside another must be to be taken for one its writer left: a write takes a second at most. */
const leftoverAge = 10 * 60 * 1000

/**
 * Removes the files beside `path` that writers killed between their write and their rename left
 * (the code cache is megabytes, and every project's checks write it): those old enough that no
 * writer is at work on them.
 */
const removeLeftovers = (path) => {
  const prefix = `${basename(path)}.`
  try {
    for (const entry of fs.readdirSync(dirname(path))) {
      if (!entry.startsWith(prefix) || !entry.endsWith(".tmp")) continue
      const leftover = join(dirname(path), entry)
      if (Date.now() - fs.statSync(leftover).mtimeMs > leftoverAge) fs.rmSync(leftover, { force: true })
    }
  } catch {
    // Another process's at the same moment, or a folder that cannot be read: left for the next write.
  }
}

/** The user's cache folder for Foundry, if it has one: an absolute `$XDG_CACHE_HOME`, else `~/.cache`. */
const cacheFolder = () => {
  try {
    const base = process.env.XDG_CACHE_HOME || join(os.homedir(), ".cache")
    return isAbsolute(base) ? join(base, "foundry") : undefined
  } catch {
    // No home folder (a user with no passwd entry): TypeScript is compiled as without a cache.
    return undefined
  }
}

/**
 * TypeScript's module, the digest of its source, and the function that keeps V8's code cache for
 * it if it needs making.
 */
const loadTypeScript = () => {
  const source = fs.readFileSync(typescriptFile, "utf8")
  const sourceDigest = digest(source)
  // V8 checks a cache against its source's length only: named by a digest of the source, a cache is
  // never taken for another TypeScript's of the same length (a patched one).
  const folder = cacheFolder()
  const cacheFile = folder === undefined ? undefined : join(folder, `typescript-${sourceDigest.slice(0, 16)}-v8-${process.versions.v8}.cache`)
  let cachedData
  try {
    if (cacheFile !== undefined) cachedData = fs.readFileSync(cacheFile)
  } catch {
    // None yet: compiled as without one, and kept after the check.
  }
  const script = new vm.Script(Module.wrap(source), { filename: typescriptFile, cachedData })
  const module = { exports: {} }
  script.runInThisContext()(module.exports, Module.createRequire(typescriptFile), module, typescriptFile, dirname(typescriptFile))
  let wanted = cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected === true)
  const keepCodeCache = () => {
    if (!wanted || cacheFile === undefined) return
    wanted = false
    // A cache folder that cannot be made or written: TypeScript is compiled at each start, as before.
    try {
      fs.mkdirSync(dirname(cacheFile), { recursive: true })
    } catch {
      return
    }
    writeWhole(cacheFile, () => script.createCachedData())
  }
  return { ts: module.exports, sourceDigest, keepCodeCache }
}
const { keepCodeCache, sourceDigest, ts } = loadTypeScript()

/** The exit status of a check that passed before, nothing it asked about changed since. */
const reusedStatus = 100

/** What the record means; a record of another format is never taken for this one. */
const format = 1

// TypeScript by its version and its compiler's source: a patched compiler of the same version differs.
const compiler = `${ts.version} ${sourceDigest}`

const serving = process.argv[2] === "--serve"
const [parentPid, record, buildInfoFile, ...args] = process.argv.slice(serving ? 3 : 2)

// The foundry process that asked for this check (by its own word: it may be gone before this one
// could ask). Killed with SIGKILL it leaves this one running (Node has no parent-death signal),
// seconds of CPU for nobody, then writing into a project that may be gone: an orphan stops at the
// next file it reads or writes, and writes nothing.
const parent = Number(parentPid)
const stopIfOrphaned = () => {
  if (process.ppid !== parent) process.exit(1)
}
const buildInfo = resolve(buildInfoFile)

const digestOf = (path) => {
  try {
    return digest(fs.readFileSync(path))
  } catch {
    return null
  }
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)

/** Whether the record says a check with these arguments passed, and every answer is the same now. */
const passedBefore = () => {
  let passed
  try {
    passed = JSON.parse(fs.readFileSync(record, "utf8"))
  } catch {
    return false
  }
  if (passed === null || typeof passed !== "object" || passed.format !== format || passed.typescript !== compiler || !same(passed.args, args)) {
    return false
  }
  try {
    return Object.entries(passed.files).every(([path, was]) => ts.sys.fileExists(path) === was) &&
      Object.entries(passed.directories).every(([path, was]) => ts.sys.directoryExists(path) === was) &&
      Object.entries(passed.realpaths).every(([path, was]) => ts.sys.realpath(path) === was) &&
      passed.folders.every(({ path, was }) => same(ts.sys.getDirectories(path), was)) &&
      passed.listings.every(({ path, extensions, excludes, includes, depth, was }) =>
        same(ts.sys.readDirectory(path, extensions ?? undefined, excludes ?? undefined, includes ?? undefined, depth ?? undefined), was)
      ) &&
      Object.entries(passed.reads).every(([path, was]) => digestOf(path) === was)
  } catch {
    return false
  }
}

if (!serving && passedBefore()) process.exit(reusedStatus)

/** What one check asked the file system, and whether it got two answers to one question. */
const newRecording = () => ({ reads: {}, files: {}, directories: {}, realpaths: {}, folders: [], listings: [], unsteady: false })
let recording = newRecording()

/**
 * Keeps the first answer to a question, and notes when a later one differs: a question asked twice
 * with two answers (a file replaced while tsc ran) means what tsc saw was no one state of the
 * files, so no record is kept.
 */
const answer = (answers, key, value) => {
  if (!(key in answers)) answers[key] = value
  else if (answers[key] !== value) recording.unsteady = true
  return value
}

/** Writes down the questions of a check that passed, unless its answers were unsteady. */
const keepRecord = () => {
  if (recording.unsteady) return
  const { reads, files, directories, realpaths, folders, listings } = recording
  writeWhole(record, () => JSON.stringify({ format, typescript: compiler, args, reads, files, directories, realpaths, folders, listings }))
}

// TypeScript's own decoding (`ts.sys.readFile`), on the bytes whose digest is kept.
const decode = (buffer) => {
  let length = buffer.length
  if (length >= 2 && buffer[0] === 0xfe && buffer[1] === 0xff) {
    length &= ~1
    for (let i = 0; i < length; i += 2) {
      const byte = buffer[i]
      buffer[i] = buffer[i + 1]
      buffer[i + 1] = byte
    }
    return buffer.toString("utf16le", 2)
  }
  if (length >= 2 && buffer[0] === 0xff && buffer[1] === 0xfe) return buffer.toString("utf16le", 2)
  if (length >= 3 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf) return buffer.toString("utf8", 3)
  return buffer.toString("utf8")
}

const system = {
  ...ts.sys,
  readFile: (path) => {
    stopIfOrphaned()
    const kept = resolve(path) !== buildInfo
    let buffer
    try {
      buffer = fs.readFileSync(path)
    } catch {
      if (kept) answer(recording.reads, path, null)
      return undefined
    }
    if (kept) answer(recording.reads, path, digest(buffer))
    return decode(buffer)
  },
  fileExists: (path) => answer(recording.files, path, ts.sys.fileExists(path)),
  directoryExists: (path) => answer(recording.directories, path, ts.sys.directoryExists(path)),
  realpath: (path) => answer(recording.realpaths, path, ts.sys.realpath(path)),
  getDirectories: (path) => {
    const was = ts.sys.getDirectories(path)
    recording.folders.push({ path, was })
    return was.slice()
  },
  readDirectory: (path, extensions, excludes, includes, depth) => {
    const was = ts.sys.readDirectory(path, extensions, excludes, includes, depth)
    recording.listings.push({ path, extensions: extensions ?? null, excludes: excludes ?? null, includes: includes ?? null, depth: depth ?? null, was })
    return was.slice()
  },
  writeFile: (path, data, writeByteOrderMark) => {
    stopIfOrphaned()
    ts.sys.writeFile(path, data, writeByteOrderMark)
  },
  exit: (status) => {
    stopIfOrphaned()
    if (status === 0) keepRecord()
    keepCodeCache()
    ts.sys.exit(status)
  }
}

// Files parsed by earlier checks, by path: each with its text and how it was parsed; those the last
// check did not ask for are dropped after it (a file renamed, a package removed), and all of them
// when the compiler options change (they decide how a file is bound).
const parsed = new Map()
let asked = new Set()
let parsedWith

/**
 * `getSourceFile` of a compiler host that hands out the file parsed before when the text and how
 * it is parsed are the same (`createSourceFile` reads the language version, the module format and
 * how much JSDoc to parse of its options; the rest follows from the compiler options). Bound once,
 * a file is bound for every program: what a program merges across files, each program's checker
 * does afresh, as a language service's document registry reuses files across its programs.
 */
const parsedOnce = (host) => (fileName, languageVersionOrOptions) => {
  const text = host.readFile(fileName)
  // As tsc's own host: a file that cannot be read is a missing file, which the program reports.
  if (text === undefined) return undefined
  asked.add(fileName)
  const how = typeof languageVersionOrOptions === "object"
    ? `${languageVersionOrOptions.languageVersion} ${languageVersionOrOptions.impliedNodeFormat} ${languageVersionOrOptions.jsDocParsingMode}`
    : String(languageVersionOrOptions)
  const before = parsed.get(fileName)
  if (before !== undefined && before.text === text && before.how === how) return before.file
  const file = ts.createSourceFile(fileName, text, languageVersionOrOptions)
  parsed.set(fileName, { text, how, file })
  return file
}

/** The diagnostics tsc reports for `program`, as it gathers them: each kind only when those before it found nothing. */
const reported = (program) => {
  const diagnostics = [...program.getConfigFileParsingDiagnostics()]
  const ofConfig = diagnostics.length
  diagnostics.push(...program.getSyntacticDiagnostics())
  if (diagnostics.length > ofConfig) return diagnostics
  diagnostics.push(...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics())
  if (diagnostics.length > ofConfig) return diagnostics
  diagnostics.push(...program.getSemanticDiagnostics())
  return diagnostics
}

/** One check as tsc would make it with `args` (`-p <tsconfig> --pretty false`): its status and output. */
const checkOnce = () => {
  recording = newRecording()
  if (passedBefore()) return { status: reusedStatus, output: "" }
  asked = new Set()
  const project = args[args.indexOf("-p") + 1]
  const diagnostics = []
  const config = ts.getParsedCommandLineOfConfigFile(project, {}, {
    ...system,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => diagnostics.push(diagnostic)
  })
  if (config !== undefined) {
    const options = JSON.stringify(config.options)
    if (options !== parsedWith) parsed.clear()
    parsedWith = options
    const host = ts.createCompilerHostWorker(config.options, undefined, system)
    host.jsDocParsingMode = ts.JSDocParsingMode.ParseForTypeErrors
    host.getSourceFile = parsedOnce(host)
    const program = ts.createProgram({
      rootNames: config.fileNames,
      options: config.options,
      projectReferences: config.projectReferences,
      host,
      configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(config)
    })
    diagnostics.push(...reported(program))
    for (const fileName of parsed.keys()) if (!asked.has(fileName)) parsed.delete(fileName)
  }
  const sorted = ts.sortAndDeduplicateDiagnostics(diagnostics)
  const status = sorted.some((d) => d.category === ts.DiagnosticCategory.Error) ? 1 : 0
  const output = ts.formatDiagnostics(sorted, {
    getCurrentDirectory: () => system.getCurrentDirectory(),
    getCanonicalFileName: (fileName) => fileName,
    getNewLine: () => "\n"
  })
  stopIfOrphaned()
  if (status === 0) keepRecord()
  return { status, output }
}

if (!serving) ts.executeCommandLine(system, () => {}, args)
else {
  // The process ends with its stdin, which closes when foundry dev ends. Requests that came while a
  // check ran (saves faster than checks; checks foundry dev no longer waits for) are answered by one
  // check of the files as they are by then, not one check each.
  let asking = []
  const answerAll = () => {
    const ids = asking
    asking = []
    const answer = checkOnce()
    process.stdout.write(ids.map((id) => `${JSON.stringify({ id, ...answer })}\n`).join(""))
    if (answer.status !== reusedStatus) keepCodeCache()
  }
  const requests = createInterface({ input: process.stdin })
  requests.on("line", (line) => {
    if (line === "") return
    asking.push(JSON.parse(line).id)
    if (asking.length === 1) setImmediate(answerAll)
  })
  requests.on("close", () => process.exit(0))
}
