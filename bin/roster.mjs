#!/usr/bin/env node
// The `roster` command. The host runner is TypeScript run directly (tsx), so a
// checkout needs no build step: `npm ci && npx roster ...`.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../runner/cli/main.ts");
process.exitCode = await main(process.argv);
