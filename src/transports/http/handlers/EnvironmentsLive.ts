/**
 * The environments group's handlers: artifacts straight from `EnvironmentStorage` (downloaded as
 * attachments, previewed as a text's start, a table's first rows or an image), and an instance's
 * environment located through the current build (which environment its agent has, and whether it
 * keeps a tree per instance or per conversation) and read at a stored version, or at version 0:
 * the tree it started with, stored beside its first version (before that, the tree the
 * environment's definition starts it with).
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import type { CompiledApp } from "../../../compiler/CompiledApp.js"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import type { EnvironmentDefinition } from "../../../definitions/defineEnvironment.js"
import { AgentNotFound, ConversationNotFound, RunNotFound } from "../../../dispatch/Dispatcher.js"
import { type Artifact, type EnvironmentScope, EnvironmentStorage } from "../../../durable/EnvironmentStorage.js"
import { InstanceStorage } from "../../../durable/InstanceStorage.js"
import { Store } from "../../../durable/Store.js"
import { scopeOf } from "../../../environments/Environments.js"
import { versionTree } from "../../../environments/seedTree.js"
import { guessDelimiter, scanDelimited } from "../../../environments/vfs/delimited.js"
import { extensionOf, isTextMediaType, isWorkbookMediaType, mediaTypeOf } from "../../../environments/vfs/mediaType.js"
import { type SheetJs, sheetJs } from "../../../environments/vfs/sheetJs.js"
import { generatedPaths } from "../../../environments/vfs/generatedDocs.js"
import { baseName, isWithin, normalizePath } from "../../../environments/vfs/paths.js"
import { checkInflatedSize, isZip } from "../../../environments/vfs/zipInflatedSize.js"
import { InstanceNotFound } from "../../../instances/instanceErrors.js"
import { BadRequest } from "../api/BadRequest.js"
import { ArtifactNotFound, EnvironmentFileNotFound, EnvironmentVersionNotFound, InitialTreeUnreadable, NoEnvironment } from "../api/EnvironmentsGroup.js"
import {
  type ArtifactPreview,
  type ArtifactView,
  type EnvironmentFileView,
  type EnvironmentView,
  previewLimits
} from "../api/environmentViews.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { ambiguousInstance } from "./ambiguousInstance.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

const artifactView = (artifact: Artifact): ArtifactView => ({
  id: artifact.id,
  runId: artifact.runId,
  agent: artifact.agent,
  instanceId: artifact.instanceId,
  conversationId: artifact.conversationId,
  path: artifact.path,
  caption: artifact.caption,
  mediaType: artifact.mediaType,
  size: artifact.size,
  createdAt: artifact.createdAt,
  url: `/api/artifacts/${encodeURIComponent(artifact.id)}`
})

/**
 * Headers of every raw download: what the files hold was written by an agent, so a browser that
 * opens one directly must neither guess it is HTML nor run anything in the server's origin.
 */
const untrusted = { "x-content-type-options": "nosniff", "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox" }

// RFC 5987: characters outside attr-char are percent-encoded, including the few encodeURIComponent keeps.
const extendedValue = (name: string) =>
  encodeURIComponent(name).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`)

/** `attachment; filename="<basename>"`, with the UTF-8 name beside it when the plain one had to change. */
export const attachment = (path: string): string => {
  const name = baseName(path) || "download"
  const plain = name.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return plain === name ? `attachment; filename="${name}"` : `attachment; filename="${plain}"; filename*=UTF-8''${extendedValue(name)}`
}

const cell = (value: unknown): string => (value === null || value === undefined ? "" : String(value))

const sheetOf = (name: string, rows: ReadonlyArray<ReadonlyArray<unknown>>, moreRows: boolean) => ({
  name,
  rows: rows.slice(0, previewLimits.rows).map((row) => row.slice(0, previewLimits.columns).map(cell)),
  truncated: moreRows || rows.length > previewLimits.rows || rows.some((row) => row.length > previewLimits.columns)
})

/**
 * The first rows of each sheet; one row more than shown is read, to tell whether there were more.
 * A workbook that would inflate past the bound (a ZIP bomb) is not parsed: only its download shows.
 */
const workbookPreview = (bytes: Uint8Array): Effect.Effect<ArtifactPreview> =>
  isZip(bytes) && Either.isLeft(checkInflatedSize(bytes)) ? Effect.succeed({ kind: "none" }) : Effect.map(sheetJs, (xlsx) => sheetsPreview(xlsx, bytes))

const sheetsPreview = (xlsx: SheetJs, bytes: Uint8Array): ArtifactPreview =>
  Either.match(Either.try(() => xlsx.read(bytes, { type: "array", sheetRows: previewLimits.rows + 1 })), {
    // Not a workbook after all: nothing to show but the download.
    onLeft: (): ArtifactPreview => ({ kind: "none" }),
    onRight: (workbook): ArtifactPreview => ({
      kind: "table",
      sheets: workbook.SheetNames.slice(0, previewLimits.sheets).map((name) => {
        const sheet = workbook.Sheets[name]
        const rows = sheet === undefined ? [] : xlsx.utils.sheet_to_json<ReadonlyArray<unknown>>(sheet, { header: 1, raw: false, defval: "", blankrows: false })
        return sheetOf(name, rows, false)
      })
    })
  })

/** CSV or TSV as one sheet named after the file. */
const delimitedPreview = (path: string, bytes: Uint8Array, tsv: boolean): ArtifactPreview => {
  const text = new TextDecoder().decode(bytes)
  const scan = scanDelimited(text, guessDelimiter(text, tsv), previewLimits.rows)
  return { kind: "table", sheets: [sheetOf(baseName(path), scan.head, scan.rows > previewLimits.rows)] }
}

const textPreview = (bytes: Uint8Array): ArtifactPreview => {
  const head = bytes.subarray(0, previewLimits.textBytes)
  const truncated = head.byteLength < bytes.byteLength
  // `stream` holds back a character cut at the limit instead of showing it as U+FFFD.
  return { kind: "text", text: new TextDecoder().decode(head, { stream: truncated }), truncated }
}

/** What the inspector shows of a file: an image, a table, the start of a text, or nothing. */
export const previewOf = (path: string, mediaType: string, bytes: Uint8Array): Effect.Effect<ArtifactPreview> => {
  const extension = extensionOf(path)
  if (mediaType.startsWith("image/")) return Effect.succeed({ kind: "image", mediaType })
  if (isWorkbookMediaType(mediaType) || extension === "xlsx" || extension === "xls") return workbookPreview(bytes)
  if (mediaType === "text/csv" || mediaType === "text/tab-separated-values") return Effect.succeed(delimitedPreview(path, bytes, mediaType !== "text/csv"))
  if (isTextMediaType(mediaType)) return Effect.succeed(textPreview(bytes))
  return Effect.succeed({ kind: "none" })
}

/** The tree an instance's environment keeps, and where it comes from. */
interface Located {
  readonly agent: string
  readonly instance: string
  readonly environment: string
  readonly definition: EnvironmentDefinition
  readonly conversation: string | null
  readonly scope: EnvironmentScope
  readonly root: string
}

/** The store's key of a tree: the same words as `scopeOf` in environments/Environments.ts. */
const byPath = ([a]: readonly [string, Uint8Array], [b]: readonly [string, Uint8Array]) => (a < b ? -1 : a > b ? 1 : 0)

const fileView = ([path, bytes]: readonly [string, Uint8Array]): EnvironmentFileView => {
  const mediaType = mediaTypeOf(path, bytes)
  return { path, size: bytes.byteLength, mediaType, text: isTextMediaType(mediaType) }
}

const badRequest = (field: string, message: string) => new BadRequest({ message: `${field}: ${message}`, issues: [{ path: field, message }] })

/** Handlers for the environment and artifact endpoints. */
export const EnvironmentsLive = HttpApiBuilder.group(FoundryApi, "environments", (handlers) =>
  Effect.gen(function*() {
    const storage = yield* EnvironmentStorage
    const instances = yield* InstanceStorage
    const store = yield* Store
    const current = yield* CurrentApp

    const findArtifact = (id: string) =>
      Effect.flatMap(storage.artifact(id), Option.match({
        onNone: () => Effect.fail(new ArtifactNotFound({ artifactId: id, message: `there is no artifact "${id}"; GET /api/runs/<runId>/artifacts lists a run's` })),
        onSome: Effect.succeed
      }))

    const artifacts = Effect.fn("EnvironmentsApi.artifacts")(function*(runId: string) {
      if (Option.isNone(yield* store.getRun(runId))) return yield* new RunNotFound({ runId, message: `there is no run "${runId}"` })
      return { artifacts: (yield* storage.artifacts(runId)).map(artifactView) }
    })

    /** Which agent owns instance `id` when the request does not say: the only one that has it. */
    const ownerOf = Effect.fn("EnvironmentsApi.ownerOf")(function*(id: string, app: CompiledApp) {
      const owners = yield* store.agentsWithInstance(id, [...app.agents.keys()])
      const [owner, ...others] = owners
      if (owner === undefined) {
        return yield* new InstanceNotFound({ agent: "", instance: id, message: `no agent has an instance "${id}"; list them with GET /api/instances?search=${encodeURIComponent(id)}` })
      }
      if (others.length > 0) return yield* ambiguousInstance(id, owners)
      return owner
    })

    /** For a per-conversation environment: the conversation asked for (of this instance), else the instance's latest. */
    const conversationOf = Effect.fn("EnvironmentsApi.conversationOf")(function*(agent: string, id: string, asked: string | undefined) {
      if (asked === undefined) {
        const [latest] = yield* store.listConversations({ agent, instanceId: id, limit: 1 })
        if (latest !== undefined) return latest.id
        return yield* new ConversationNotFound({
          conversation: "",
          message: `the environment of agent "${agent}" is kept per conversation, and instance "${id}" has no conversation yet`
        })
      }
      const found = yield* store.getConversation(asked)
      if (Option.isNone(found) || found.value.agent !== agent || found.value.instanceId !== id) {
        return yield* new ConversationNotFound({
          conversation: asked,
          message: `instance "${id}" of agent "${agent}" has no conversation "${asked}"; GET /api/instances/${id}/conversations lists them`
        })
      }
      return asked
    })

    const locate = Effect.fn("EnvironmentsApi.locate")(function*(id: string, query: { readonly agent?: string | undefined; readonly conversation?: string | undefined }) {
      const app = yield* current.get
      const agent = query.agent ?? (yield* ownerOf(id, app))
      const compiled = app.agents.get(agent)
      if (compiled === undefined) return yield* new AgentNotFound({ agent, message: `there is no agent "${agent}" in the current build` })
      const definition = compiled.definition.environment
      const environment = definition === undefined ? undefined : app.table.idOf(definition)
      if (definition === undefined || environment === undefined) {
        return yield* new NoEnvironment({ agent, message: `agent "${agent}" works without an environment, so its instances have no files (an agent gets one with environment: in its agent.ts)` })
      }
      if (Option.isNone(yield* instances.get(agent, id))) {
        return yield* new InstanceNotFound({ agent, instance: id, message: `agent "${agent}" has no instance "${id}"; list them with GET /api/instances?agent=${encodeURIComponent(agent)}` })
      }
      const conversation = definition.persistence === "conversation" ? yield* conversationOf(agent, id, query.conversation) : null
      const located: Located = {
        agent,
        instance: id,
        environment,
        definition,
        conversation,
        scope: scopeOf({ environmentId: environment, environment: definition, context: { agent, instanceId: id, conversationId: conversation ?? "" } }),
        root: app.table.root
      }
      return located
    })

    /** The tree at `version` (0: the starting tree; undefined: the latest, or the starting tree while there is none). */
    const treeAt = Effect.fn("EnvironmentsApi.treeAt")(function*(located: Located, head: number, version: number | undefined) {
      const wanted = version ?? head
      const found = yield* versionTree(storage, located.scope, located.definition, located.root, wanted).pipe(
        Effect.catchTag("StartingFilesUnreadable", ({ message }) => new InitialTreeUnreadable({ environment: located.environment, message }))
      )
      if (Option.isNone(found)) {
        return yield* new EnvironmentVersionNotFound({
          version: wanted,
          head,
          message: head === 0
            ? `there is no version ${wanted}: nothing has changed the files yet, so only version 0 (the starting tree) exists`
            : `there is no version ${wanted}: versions run from 1 to ${head} (0 is the starting tree)`
        })
      }
      return { version: wanted, tree: found.value }
    })

    const environmentView = Effect.fn("EnvironmentsApi.environment")(function*(id: string, query: {
      readonly agent?: string | undefined
      readonly conversation?: string | undefined
      readonly version?: number | undefined
    }) {
      const located = yield* locate(id, query)
      const history = yield* storage.history(located.scope, { limit: 100 })
      const head = history[0]?.version ?? 0
      const { tree, version } = yield* treeAt(located, head, query.version)
      const view: EnvironmentView = {
        agent: located.agent,
        instance: located.instance,
        environment: located.environment,
        persistence: located.definition.persistence,
        conversation: located.conversation,
        scope: located.scope.key,
        version,
        head,
        files: [...tree].sort(byPath).map(fileView),
        history
      }
      return view
    })

    const file = Effect.fn("EnvironmentsApi.file")(function*(id: string, query: {
      readonly agent?: string | undefined
      readonly conversation?: string | undefined
      readonly version?: number | undefined
      readonly path: string
    }) {
      const path = yield* Either.mapLeft(normalizePath(query.path), (invalid) => badRequest("path", invalid.message))
      const located = yield* locate(id, query)
      const head = (yield* storage.history(located.scope, { limit: 1 }))[0]?.version ?? 0
      const { tree, version } = yield* treeAt(located, head, query.version)
      const bytes = tree.get(path)
      if (bytes === undefined) {
        // The listing of this very tree: the agent (an instance id may be another agent's too) and the conversation.
        const at = new URLSearchParams({ agent: located.agent, ...(located.conversation === null ? {} : { conversation: located.conversation }) })
        const listing = `GET /api/instances/${encodeURIComponent(id)}/environment?${at} lists the files`
        const generated = generatedPaths.some((prefix) => isWithin(path, prefix))
        return yield* new EnvironmentFileNotFound({
          path,
          version,
          message: generated
            ? `${path} is one of the docs Foundry makes afresh for each run (${generatedPaths.join(", ")}), so it is not kept with the instance's files; ${listing}`
            : `there is no file ${path} at version ${version}; ${listing}`
        })
      }
      const mediaType = mediaTypeOf(path, bytes)
      return HttpServerResponse.uint8Array(bytes, {
        contentType: isTextMediaType(mediaType) ? "text/plain; charset=utf-8" : mediaType,
        headers: untrusted
      })
    })

    return handlers
      .handle("artifacts", ({ path }) => artifacts(path.runId).pipe(orStoreUnavailable))
      .handleRaw("artifact", ({ path }) =>
        findArtifact(path.id).pipe(
          Effect.map(({ artifact, bytes }) =>
            HttpServerResponse.uint8Array(bytes, {
              contentType: artifact.mediaType,
              headers: { ...untrusted, "content-disposition": attachment(artifact.path) }
            })),
          orStoreUnavailable
        ))
      .handle("preview", ({ path }) =>
        findArtifact(path.id).pipe(
          Effect.flatMap(({ artifact, bytes }) => previewOf(artifact.path, artifact.mediaType, bytes)),
          orStoreUnavailable
        ))
      .handle("environment", ({ path, urlParams }) => environmentView(path.id, urlParams).pipe(orStoreUnavailable))
      .handleRaw("file", ({ path, urlParams }) => file(path.id, urlParams).pipe(orStoreUnavailable))
  }))
