/**
 * A release as a container (`foundry build --docker`): a `Dockerfile` that installs the framework
 * at the version that built the release and serves the release with `foundry start --release`, a
 * `compose.yaml` that runs it beside PostgreSQL as a cluster runner, and the framework itself as
 * an `npm pack` tarball in the release folder, since the image cannot fetch it from the registry.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { Data, Effect } from "effect"
import type { StoreConfig } from "../definitions/configFields.js"
import { packageLayout } from "../packageLayout.js"

/** What the container files are made from. */
export interface ContainerSpec {
  /** The release's id and folder. */
  readonly id: string
  readonly folder: string
  /** The framework's version, which names its tarball. */
  readonly version: string
  /** The port the release's config listens on. */
  readonly port: number
}

/** The framework could not be packed; the Dockerfile then needs the tarball put there by hand. */
export class PackFailed extends Data.TaggedError("PackFailed")<{ readonly message: string }> {}

/** The tarball `npm pack` makes of the framework. */
export const tarballOf = (version: string): string => `foundry-${version}.tgz`

const dockerfile = (spec: ContainerSpec): string => `# Release ${spec.id}, served by Foundry ${spec.version} on Node 20. In this folder:
#   docker build -t foundry-app .
#   docker run --rm -v foundry-data:/app/.foundry foundry-app foundry token create --scope admin --dir /app
#   docker run -d -p ${spec.port}:${spec.port} -v foundry-data:/app/.foundry foundry-app
# The server listens beyond loopback, so it needs an API token in its store and refuses to start
# without one. The volume keeps the release's local state: a SQLite store and the generated secret
# key (or set FOUNDRY_SECRET_KEY). For PostgreSQL, see compose.yaml.
FROM node:20-slim
# Foundry is installed from its packed tarball, written here by \`foundry build --docker\`
# (once it is on npm: RUN npm install --global foundry@${spec.version}).
COPY ${tarballOf(spec.version)} /opt/foundry/
RUN npm install --global --omit=dev /opt/foundry/${tarballOf(spec.version)} && npm cache clean --force
COPY --chown=node:node . /app
RUN mkdir -p /app/.foundry && chown node:node /app/.foundry
USER node
ENV NODE_ENV=production
# V8's background threads (compilers, garbage collector) one fewer than the cores the container
# sees, instead of Node's four whatever the cores (docs/decisions.md).
ENV NODE_OPTIONS=--v8-pool-size=0
EXPOSE ${spec.port}
CMD ["foundry", "start", "--release", "/app", "--host", "0.0.0.0", "--port", "${spec.port}"]
`

const compose = (spec: ContainerSpec): string => `# Release ${spec.id} as one cluster runner on PostgreSQL. The release's foundry.config must read
# its store from DATABASE_URL: store: { postgres: Config.redacted("DATABASE_URL") }. In this folder:
#   docker compose run --rm app foundry token create --scope admin --dir /app
#   docker compose up -d
# Clients send the token as Authorization: Bearer <token>. Change the database password below.
# Installation secrets are sealed with the key kept in the app volume; to give your own, set
# FOUNDRY_SECRET_KEY under the app's environment (every runner of a cluster needs the same key).
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: foundry
      POSTGRES_PASSWORD: foundry
      POSTGRES_DB: foundry
    volumes:
      - db:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U foundry -d foundry"]
      interval: 2s
      timeout: 5s
      retries: 30
  app:
    build: .
    command: ["foundry", "start", "--release", "/app", "--host", "0.0.0.0", "--port", "${spec.port}", "--cluster"]
    environment:
      DATABASE_URL: postgres://foundry:foundry@db:5432/foundry
    ports:
      - "${spec.port}:${spec.port}"
    volumes:
      - app:/app/.foundry
    depends_on:
      db:
        condition: service_healthy
volumes:
  db:
  app:
`

// The release's local state never goes into an image: a server started on the folder writes it there.
const dockerignore = `.foundry/\n`

/** Why compose.yaml's DATABASE_URL would not reach the store, for a config that does not read it. */
export const composeStoreNote = (store: StoreConfig, configFile: string | undefined): string | undefined => {
  const config = configFile ?? "foundry.config.ts"
  if ("sqlite" in store) {
    return `${config} keeps runs in SQLite, so the compose.yaml app (a cluster runner) refuses to start: ` +
      `set store: { postgres: Config.redacted("DATABASE_URL") } to use its PostgreSQL, or run the Dockerfile alone`
  }
  return typeof store.postgres === "string"
    ? `${config} names a fixed PostgreSQL URL, so compose.yaml's DATABASE_URL is not used: set store: { postgres: Config.redacted("DATABASE_URL") }`
    : undefined
}

/** Packs the running framework into `folder` with `npm pack` (about a second). */
const packFramework = (folder: string, version: string) =>
  Effect.async<void, PackFailed>((resume) => {
    const child = execFile(
      "npm",
      ["pack", "--ignore-scripts", "--pack-destination", folder, packageLayout.root],
      { cwd: folder, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(error === null ? Effect.void : Effect.fail(new PackFailed({ message: `npm pack failed: ${`${stderr}${stdout}`.trim() || error.message}` })))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  }).pipe(
    Effect.zipRight(Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(join(folder, tarballOf(version))))),
    Effect.filterOrFail((packed) => packed, () => new PackFailed({ message: `npm pack did not write ${tarballOf(version)}` })),
    Effect.asVoid
  )

/**
 * Writes the container files into the release folder and packs the framework beside them. A pack
 * that fails leaves the other files written and says how to add the tarball by hand.
 */
export const writeContainerFiles = Effect.fn("release.writeContainerFiles")(function*(spec: ContainerSpec) {
  const fs = yield* FileSystem.FileSystem
  yield* fs.writeFileString(join(spec.folder, "Dockerfile"), dockerfile(spec))
  yield* fs.writeFileString(join(spec.folder, "compose.yaml"), compose(spec))
  yield* fs.writeFileString(join(spec.folder, ".dockerignore"), dockerignore)
  return yield* packFramework(spec.folder, spec.version).pipe(
    Effect.mapError((failure) =>
      new PackFailed({
        message: `${failure.message}\n  fix: before docker build, run \`npm pack ${packageLayout.root} --pack-destination ${spec.folder}\``
      })
    ),
    Effect.either
  )
})
