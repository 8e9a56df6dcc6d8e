import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8's full collection, asked for by the gateway once a burst of held bodies
 * is over (budget.ts). Exposed here, at the first ask, rather than by starting
 * every process with `--expose-gc`: V8 refuses the code cache Node ships for
 * its own modules when the flags differ from the ones it was built with, so
 * that flag made every `roster` command compile Node's modules from source
 * (about 12 ms of each start here, measured in pairs with and without it;
 * bench/RESULTS.md has what it did to whole commands). Turned on now,
 * the flag costs only what this process loads after a burst. A process started
 * with `--expose-gc` (a bench, a debugging session) keeps its own `gc`.
 */
let collect: (() => void) | undefined;

export function fullCollection(): void {
  collect ??= (globalThis as { gc?: () => void }).gc ?? exposed();
  collect();
}

function exposed(): () => void {
  setFlagsFromString("--expose-gc");
  // a new context is made with the flag on, so its global has `gc`
  return runInNewContext("gc") as () => void;
}
