/**
 * Foundry's native HTTP API, as one `HttpApi` value: the server implements it, clients and the
 * OpenAPI document (`/api/openapi.json`) are derived from it. Any endpoint may answer `BadRequest`
 * (see `readableErrors`) or, when the store cannot be used, `StoreUnavailable` (see
 * `handlers/storeUnavailable`).
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { declareSecurity } from "../../../auth/openApiSecurity.js"
import { ApprovalsGroup } from "./ApprovalsGroup.js"
import { BadRequest, declareBadRequestOnly } from "./BadRequest.js"
import { CapabilitiesGroup } from "./CapabilitiesGroup.js"
import { ClusterGroup } from "./ClusterGroup.js"
import { ConversationsGroup } from "./ConversationsGroup.js"
import { EnvironmentsGroup } from "./EnvironmentsGroup.js"
import { EventsGroup } from "./EventsGroup.js"
import { HooksGroup } from "./HooksGroup.js"
import { InstancesGroup } from "./InstancesGroup.js"
import { declareMcp } from "../../mcp/openApi.js"
import { OpenAiGroup } from "../../openai/OpenAiGroup.js"
import { ReleasesGroup } from "./ReleasesGroup.js"
import { SchedulesGroup } from "./SchedulesGroup.js"
import { RunsGroup } from "./RunsGroup.js"
import { StoreUnavailable } from "./StoreUnavailable.js"
import { SystemGroup } from "./SystemGroup.js"
import { TokensGroup } from "./TokensGroup.js"
import { UsageGroup } from "./UsageGroup.js"
import { withoutSchemaIds } from "./withoutSchemaIds.js"

/** The API. */
export class FoundryApi extends HttpApi.make("foundry")
  .add(RunsGroup)
  .add(ConversationsGroup)
  .add(InstancesGroup)
  .add(CapabilitiesGroup)
  .add(ApprovalsGroup)
  .add(EventsGroup)
  .add(HooksGroup)
  .add(SchedulesGroup)
  .add(UsageGroup)
  .add(SystemGroup)
  .add(ClusterGroup)
  .add(OpenAiGroup)
  .add(TokensGroup)
  .add(ReleasesGroup)
  .add(EnvironmentsGroup)
  .addError(BadRequest)
  .addError(StoreUnavailable)
  .annotate(OpenApi.Title, "Foundry")
  .annotate(OpenApi.Transform, (spec) => withoutSchemaIds(declareSecurity(declareMcp(declareBadRequestOnly(spec)))))
{}
