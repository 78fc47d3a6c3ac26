/**
 * Foundry's public API: what route files and `foundry.config.ts` import from "foundry".
 */
export {
  type AgentDefinition,
  type AnyContext,
  defineAgent,
  type InstanceInfo,
  type Instructions,
  type ModelSpec
} from "./definitions/defineAgent.js"
export { type AnyLayer, type Budget, type PermissionRule, type StoreConfig } from "./definitions/configFields.js"
export { type ConfigDefinition, defineConfig, type ProvidedBy } from "./definitions/defineConfig.js"
export { defineMcpServer, type McpServerDefinition } from "./definitions/defineMcpServer.js"
export {
  defineEnvironment,
  type EnvironmentBackend,
  type EnvironmentDefinition,
  type EnvironmentLimits,
  type EnvironmentPersistence
} from "./definitions/defineEnvironment.js"
export {
  type AdapterContext,
  type AdapterFs,
  type AdapterFunctions,
  type AdapterModule,
  defineAdapter,
  definePureModule,
  defineTools,
  type EnvironmentModule,
  type PureModule,
  type ToolsModule
} from "./definitions/environmentModules.js"
export { spreadsheet } from "./environments/modules/spreadsheet.js"
export {
  definePlaybook,
  event,
  type EventSource,
  type InstallableCapability,
  type InstanceByKey,
  type InstanceSeed,
  type InstancesWithInstalled,
  type PlaybookInstance,
  type PlaybookDefinition,
  type PlaybookSource,
  webhook,
  type WebhookSource
} from "./definitions/definePlaybook.js"
export { defineSchedule, type ScheduleDefinition, type ScheduleTiming } from "./definitions/defineSchedule.js"
export {
  type AnyTool,
  type ApprovalPolicy,
  defineTool,
  type Installable,
  type ToolDefinition,
  type ToolRequirements,
  type ToolRunContext
} from "./definitions/defineTool.js"
export type { ChatMessage, LanguageModel, ModelChunk, ModelRequest, ToolCall, ToolSpec } from "./models/Model.js"
export { ModelError } from "./models/Model.js"
export * as Scripted from "./models/scripted.js"
export type { ModelPrice } from "./models/prices.js"
export type { AgentMcp, McpServerSpec } from "./mcp/McpServerSpec.js"
