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
"use strict"
const { createHash, randomUUID } = require("node:crypto")
const fs = require("node:fs")
const { resolve } = require("node:path")
const ts = require("typescript")

/** The exit status of a check that passed before, nothing it asked about changed since. */
const reusedStatus = 100

/** What the record means; a record of another format is never taken for this one. */
const format = 1

// TypeScript by its version and its compiler's file: a patched compiler of the same version differs.
const compiler = (() => {
  const file = fs.statSync(require.resolve("typescript"))
  return `${ts.version} ${file.size} ${file.mtimeMs}`
})()

const [parentPid, record, buildInfoFile, ...args] = process.argv.slice(2)

// The foundry process that asked for this check (by its own word: it may be gone before this one
// could ask). Killed with SIGKILL it leaves this one running (Node has no parent-death signal),
// seconds of CPU for nobody, then writing into a project that may be gone: an orphan stops at the
// next file it reads or writes, and writes nothing.
const parent = Number(parentPid)
const stopIfOrphaned = () => {
  if (process.ppid !== parent) process.exit(1)
}
const buildInfo = resolve(buildInfoFile)

const digest = (bytes) => createHash("sha256").update(bytes).digest("hex")
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

if (passedBefore()) process.exit(reusedStatus)

const reads = {}
const files = {}
const directories = {}
const realpaths = {}
const folders = []
const listings = []
// A question asked twice with two answers (a file replaced while tsc ran): what tsc saw was no one
// state of the files, so no record is kept.
let unsteady = false

/** Keeps the first answer to a question, and notes when a later one differs. */
const answer = (answers, key, value) => {
  if (!(key in answers)) answers[key] = value
  else if (answers[key] !== value) unsteady = true
  return value
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
      if (kept) answer(reads, path, null)
      return undefined
    }
    if (kept) answer(reads, path, digest(buffer))
    return decode(buffer)
  },
  fileExists: (path) => answer(files, path, ts.sys.fileExists(path)),
  directoryExists: (path) => answer(directories, path, ts.sys.directoryExists(path)),
  realpath: (path) => answer(realpaths, path, ts.sys.realpath(path)),
  getDirectories: (path) => {
    const was = ts.sys.getDirectories(path)
    folders.push({ path, was })
    return was.slice()
  },
  readDirectory: (path, extensions, excludes, includes, depth) => {
    const was = ts.sys.readDirectory(path, extensions, excludes, includes, depth)
    listings.push({ path, extensions: extensions ?? null, excludes: excludes ?? null, includes: includes ?? null, depth: depth ?? null, was })
    return was.slice()
  },
  writeFile: (path, data, writeByteOrderMark) => {
    stopIfOrphaned()
    ts.sys.writeFile(path, data, writeByteOrderMark)
  },
  exit: (status) => {
    stopIfOrphaned()
    if (status === 0 && !unsteady) {
      const temporary = `${record}.${randomUUID()}.tmp`
      try {
        const kept = { format, typescript: compiler, args, reads, files, directories, realpaths, folders, listings }
        fs.writeFileSync(temporary, JSON.stringify(kept), { flag: "wx" })
        fs.renameSync(temporary, record)
      } catch {
        try {
          fs.rmSync(temporary, { force: true })
        } catch {
          // Left behind, it is only a file that no check reads.
        }
      }
    }
    ts.sys.exit(status)
  }
}

ts.executeCommandLine(system, () => {}, args)
