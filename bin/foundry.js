#!/usr/bin/env node
// The `foundry` command. The framework ships as TypeScript, loaded through tsx.
import { register } from "tsx/esm/api"

register()
Reflect.set(globalThis, Symbol.for("foundry/tsx-registered"), true)
await import("../src/cli/main.ts")
