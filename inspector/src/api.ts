/**
 * The inspector's view of the HTTP API: typed fetches (the live event stream is liveEvents.ts).
 */
import type { BuildReport } from "../../src/compiler/BuildStatus.js"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import type { EventPage } from "../../src/transports/http/api/EventsGroup.js"
import type { UsageReport } from "../../src/transports/http/api/UsageGroup.js"
import type { ApprovalView, MessageView, RunView } from "../../src/transports/http/api/views.js"
import type { RouteView as RouteSchema } from "../../src/transports/http/api/SystemGroup.js"
import type { SessionView } from "../../src/transports/http/api/TokensGroup.js"
import type { ClusterView, ConversationPlacement } from "../../src/dispatch/ClusterStatus.js"
import type {
  ArtifactList,
  ArtifactPreview as ArtifactPreviewSchema,
  ArtifactView as ArtifactSchema,
  EnvironmentFileView as EnvironmentFileSchema,
  EnvironmentVersionView as EnvironmentVersionSchema,
  EnvironmentView as EnvironmentSchema
} from "../../src/transports/http/api/environmentViews.js"
import type {
  InstallationView as InstallationSchema,
  InstancePage,
  InstanceSummary as InstanceSummaryView,
  InstanceView as InstanceSchema
} from "../../src/transports/http/api/instanceViews.js"
import type { ConversationPage, ConversationView as ConversationSchema } from "../../src/transports/http/api/conversationViews.js"
import { signIn } from "./signIn.js"

export type { ApprovalView, BuildReport, FoundryEvent, MessageView, RunView, UsageReport }

/** A page of the event log; `nextAfter` is the cursor of the next page. */
export type EventPageView = typeof EventPage.Type

/** A route of the project, as `/api/routes` lists it (the manifest's shape, and the model an agent runs on). */
export type RouteView = typeof RouteSchema.Encoded

/** An API call that did not succeed, with the server's message (and, on a 429, how long to wait). */
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly retryAfterMs?: number, readonly tag?: string) {
    super(message)
  }
}

/** The `_tag` of an error body, which names what went wrong. */
const tagOf = (body: unknown): string | undefined =>
  typeof body === "object" && body !== null && "_tag" in body && typeof body._tag === "string" ? body._tag : undefined

/** The wait a `Retry-After` header asks for, when it gives seconds. */
const retryAfterOf = (response: Response): number | undefined => {
  const seconds = Number(response.headers.get("retry-after") ?? "")
  return response.headers.has("retry-after") && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined
}

/** The cluster's runners (`mode: "local"` for a single process), as `/api/cluster` answers. */
export type ClusterStatusView = typeof ClusterView.Encoded

/** The runner a conversation lives on. */
export type PlacementView = typeof ConversationPlacement.Encoded

/** Instances as `/api/instances` answers (the page's `next` cursor is opaque text). */
export type InstanceSummary = typeof InstanceSummaryView.Encoded
export type InstallationView = typeof InstallationSchema.Encoded
export type InstanceView = typeof InstanceSchema.Encoded
export type InstancePageView = typeof InstancePage.Encoded

/** Conversations as `/api/conversations` and an instance's conversations answer (a page's `next` is opaque text). */
export type ConversationView = typeof ConversationSchema.Encoded
export type ConversationPageView = typeof ConversationPage.Encoded

/** Artifacts and environments as `/api/artifacts` and `/api/instances/:id/environment` answer. */
export type ArtifactView = typeof ArtifactSchema.Encoded
export type ArtifactListView = typeof ArtifactList.Encoded
export type ArtifactPreview = typeof ArtifactPreviewSchema.Encoded
export type EnvironmentView = typeof EnvironmentSchema.Encoded
export type EnvironmentFile = typeof EnvironmentFileSchema.Encoded
export type EnvironmentVersion = typeof EnvironmentVersionSchema.Encoded

/** Who the inspector is signed in as (`token: null` when the server is open). */
export type Session = typeof SessionView.Type

// A 401 means the server needs a token the browser has not given (or one since revoked): sign in, then send the call again.
const request = async <A>(path: string, init?: RequestInit): Promise<A> => {
  for (;;) {
    const response = await fetch(path, { ...init, headers: { "content-type": "application/json", ...init?.headers } })
    const body: unknown = await response.json().catch(() => undefined)
    const message = typeof body === "object" && body !== null && "message" in body ? String(body.message) : response.statusText
    if (response.status === 401) {
      await signIn(message)
      continue
    }
    if (!response.ok) throw new ApiError(response.status, message, retryAfterOf(response), tagOf(body))
    return body as A
  }
}

/** A file's content as text, signing in first as `request` does. */
const requestText = async (path: string): Promise<string> => {
  for (;;) {
    const response = await fetch(path)
    if (response.ok) return response.text()
    const body: unknown = await response.json().catch(() => undefined)
    const message = typeof body === "object" && body !== null && "message" in body ? String(body.message) : response.statusText
    if (response.status !== 401) throw new ApiError(response.status, message)
    await signIn(message)
  }
}

/** The API. */
export const api = {
  /**
   * Who the inspector is signed in as; asks for a token first when the server needs one. The call
   * itself is public (it answers the mode, and `token: null` without a session), so it signs in on that.
   */
  session: async (): Promise<Session> => {
    for (;;) {
      const session = await request<Session>("/api/session")
      if (session.mode === "open" || session.token !== null) return session
      await signIn("this server needs an API token")
    }
  },
  signOut: () => fetch("/api/session", { method: "DELETE" }),
  health: () => request<{ status: string; agents: number; uptimeMs: number }>("/health"),
  cluster: () => request<ClusterStatusView>("/api/cluster"),
  placement: (conversation: string) => request<PlacementView>(`/api/cluster/conversations/${encodeURIComponent(conversation)}`),
  build: () => request<BuildReport>("/api/build"),
  routes: () => request<{ config: string | null; routes: ReadonlyArray<RouteView> }>("/api/routes"),
  runs: (query = "") => request<ReadonlyArray<RunView>>(`/api/runs${query}`),
  conversations: (query = "") => request<ConversationPageView>(`/api/conversations${query}`),
  run: (id: string) => request<RunView>(`/api/runs/${encodeURIComponent(id)}`),
  /** The event log, filtered and paged as `/api/events` takes it (`?type=...&since=...&after=...`). */
  events: (query: URLSearchParams) => request<EventPageView>(`/api/events?${query}`),
  runEvents: (id: string) => request<ReadonlyArray<FoundryEvent>>(`/api/runs/${encodeURIComponent(id)}/events`),
  messages: (conversation: string) =>
    request<ReadonlyArray<MessageView>>(`/api/conversations/${encodeURIComponent(conversation)}/messages`),
  /** Approvals, the newest first: of one status and one run when given, at most `limit` (the server's default: 100). */
  approvals: ({ limit, run, status }: { readonly status?: string; readonly run?: string; readonly limit?: number } = {}) =>
    request<ReadonlyArray<ApprovalView>>(`/api/approvals?${new URLSearchParams({
      ...(status === undefined ? {} : { status }),
      ...(run === undefined ? {} : { run }),
      ...(limit === undefined ? {} : { limit: String(limit) })
    })}`),
  /** `scope: "conversation"` (approvals only) lets the same tool run without asking again in that conversation. */
  decide: (id: string, decision: "approve" | "deny", scope: "once" | "conversation" = "once", reason?: string) =>
    request<ApprovalView>(`/api/approvals/${encodeURIComponent(id)}`, {
      method: "POST",
      body: JSON.stringify({ decision, ...(scope === "once" ? {} : { scope }), ...(reason === undefined ? {} : { reason }) })
    }),
  send: (body: { agent: string; message: string; conversation?: string; instance?: string }) =>
    request<{ runId: string; conversationId: string; instanceId: string }>("/api/runs", { method: "POST", body: JSON.stringify(body) }),
  cancel: (id: string) => request<RunView>(`/api/runs/${encodeURIComponent(id)}/cancel`, { method: "POST" }),
  /** Cancels the run and starts another in its conversation with `message` (`steeredFrom` links them). */
  steer: (id: string, message: string) =>
    request<{ runId: string; conversationId: string; instanceId: string; steeredFrom: string }>(
      `/api/runs/${encodeURIComponent(id)}/steer`,
      { method: "POST", body: JSON.stringify({ message }) }
    ),
  schedules: () => request<ReadonlyArray<ScheduleView>>("/api/schedules"),
  usage: (query: string) => request<UsageReport>(`/api/usage${query}`),
  schedule: (id: string, action: "pause" | "resume" | "trigger") =>
    request<ScheduleView>(`/api/schedules/${encodeURIComponent(id)}/${action}`, { method: "POST" }),
  /** A page of instances, filtered as `/api/instances` takes it (`?agent=&search=&status=&limit=&after=`). */
  instances: (query: URLSearchParams) => request<InstancePageView>(`/api/instances?${query}`),
  instance: (ref: InstanceRef) => request<InstanceView>(instancePath(ref)),
  /** Pauses (`paused: true`) or resumes an instance, saying why. */
  pauseInstance: (ref: InstanceRef, paused: boolean, reason?: string) =>
    request<InstanceView>(instancePath(ref), { method: "PATCH", body: JSON.stringify(reason === undefined ? { paused } : { paused, reason }) }),
  /** Archives an instance: it refuses new runs and keeps its history. */
  archiveInstance: (ref: InstanceRef) => request<InstanceView>(instancePath(ref), { method: "DELETE" }),
  instanceConversations: (ref: InstanceRef) => request<ReadonlyArray<ConversationView>>(instancePath(ref, "/conversations")),
  /** The files a run presented, in order. */
  artifacts: (runId: string) => request<ArtifactListView>(`/api/runs/${encodeURIComponent(runId)}/artifacts`),
  artifactPreview: (id: string) => request<ArtifactPreview>(`/api/artifacts/${encodeURIComponent(id)}/preview`),
  /** An instance's environment at `version` (absent: the latest; 0: the starting files), in `conversation` when it keeps one per conversation. */
  environment: (ref: InstanceRef, at: EnvironmentAt = {}) => request<EnvironmentView>(environmentPath(ref, "", at)),
  /** Where a file of an instance's environment is downloaded from. */
  environmentFileUrl: (ref: InstanceRef, path: string, at: EnvironmentAt = {}) => environmentPath(ref, "/file", at, path),
  environmentText: (ref: InstanceRef, path: string, at: EnvironmentAt = {}) => requestText(environmentPath(ref, "/file", at, path)),
  /** The releases the server keeps, newest first. */
  releases: () => request<ReadonlyArray<ReleaseView>>("/api/releases"),
  /** The deployment log, newest first. */
  deployments: () => request<ReadonlyArray<DeploymentView>>("/api/deployments?limit=50")
}

/** Which instance: its agent (empty when the id alone names it) and its id. */
export interface InstanceRef {
  readonly agent: string
  readonly id: string
}

const instancePath = ({ agent, id }: InstanceRef, below = ""): string =>
  `/api/instances/${encodeURIComponent(id)}${below}${agent === "" ? "" : `?agent=${encodeURIComponent(agent)}`}`

/** Which tree of an instance's environment: a version (absent: the latest) of a conversation (absent: the instance's, or its latest conversation's). */
export interface EnvironmentAt {
  readonly version?: number | undefined
  readonly conversation?: string | undefined
}

const environmentPath = ({ agent, id }: InstanceRef, below: string, at: EnvironmentAt, path?: string): string => {
  const query = new URLSearchParams()
  if (agent !== "") query.set("agent", agent)
  if (at.conversation !== undefined) query.set("conversation", at.conversation)
  if (at.version !== undefined) query.set("version", String(at.version))
  if (path !== undefined) query.set("path", path)
  return `/api/instances/${encodeURIComponent(id)}/environment${below}${query.size > 0 ? `?${query}` : ""}`
}

/** A schedule with its next and last firing. */
export interface ScheduleView {
  readonly id: string
  readonly agent: string
  readonly instance: string
  readonly timing: Readonly<Record<string, string>>
  readonly status: "active" | "paused" | "done"
  /** Why a `done` schedule will not fire again. */
  readonly reason: string | null
  readonly nextFire: number | null
  readonly lastFire: number | null
  readonly lastRunId: string | null
}

// Written out rather than imported: the schemas live beside the server's release code, which
// imports Node modules the inspector's type-check does not know.
/** What changed for one kind of route between two releases, by id. */
export interface RouteChangesView {
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
}

/** What a release changed against the one current before it, per kind of route. */
export interface ReleaseSummaryView {
  readonly agents: RouteChangesView
  readonly tools: RouteChangesView
  readonly mcpServers: RouteChangesView
  readonly schedules: RouteChangesView
  readonly playbooks: RouteChangesView
  /** Whether the config changed (absent from summaries kept before it was said). */
  readonly config?: boolean
}

/** A release made current, as `/api/deployments` lists it. */
export interface DeploymentView {
  readonly seq: number
  readonly release: string
  readonly action: "deploy" | "rollback" | "start"
  readonly deployedAt: number
  readonly deployedBy: string | null
  readonly previous: string | null
  readonly summary: ReleaseSummaryView
}

/** A release the server keeps, as `/api/releases` lists it. */
export interface ReleaseView {
  readonly id: string
  readonly createdAt: number
  readonly deployedAt: number
  readonly deployedBy: string | null
  readonly summary: ReleaseSummaryView
  readonly current: boolean
  readonly runs: number
}
