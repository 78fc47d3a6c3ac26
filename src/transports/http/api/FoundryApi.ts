/**
 * Foundry's native HTTP API, as one `HttpApi` value: the server implements it, clients and the
 * OpenAPI document (`/api/openapi.json`) are derived from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { ApprovalsGroup } from "./ApprovalsGroup.js"
import { ConversationsGroup } from "./ConversationsGroup.js"
import { EventsGroup } from "./EventsGroup.js"
import { HooksGroup } from "./HooksGroup.js"
import { SchedulesGroup } from "./SchedulesGroup.js"
import { RunsGroup } from "./RunsGroup.js"
import { SystemGroup } from "./SystemGroup.js"

/** The API. */
export class FoundryApi extends HttpApi.make("foundry")
  .add(RunsGroup)
  .add(ConversationsGroup)
  .add(ApprovalsGroup)
  .add(EventsGroup)
  .add(HooksGroup)
  .add(SchedulesGroup)
  .add(SystemGroup)
  .annotate(OpenApi.Title, "Foundry")
{}
