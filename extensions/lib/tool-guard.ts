/**
 * Keeps an error in our extensions' code from ending the run. pi turns an
 * error that a tool's execute throws or rejects with into an error result the
 * model sees; but an error raised later by something the call started — a
 * socket's `error` nobody listens for, a throw in a timer or an event handler,
 * a promise nobody awaits — reaches the process, and Node ends the process
 * (pi, the whole run) on it.
 *
 * So every roster extension's default export goes through `guarded`: each
 * tool call's execute runs in an async context of its own (AsyncLocalStorage,
 * which follows the timers, sockets, servers and promises the call starts), and
 * one process handler looks an uncaught error's context up:
 *   - a call still running ends at once, with the error as its result, and its
 *     signal is aborted so the work it started stops;
 *   - a call already ended, or what an extension started as it loaded (an MCP
 *     server's connection, say): the error is written to stderr and the run
 *     goes on;
 *   - anything else (pi's own code) ends the process as Node would have, so
 *     nothing of pi's is hidden.
 * Narrower than a process-wide catch-all, which would hide pi's own faults and
 * keep a broken pi answering; wider than a try/catch in each tool, which can't
 * reach a callback that runs after execute returned.
 * The handler is installed once per process and shared through a global
 * symbol: jiti may load this module once per extension, and every copy must
 * see the same contexts. Nothing here enforces anything (the box is untrusted):
 * it only keeps a bug in a tool from costing the run.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { inspect } from "node:util";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type Tool = Parameters<ExtensionAPI["registerTool"]>[0];
type Register = (pi: ExtensionAPI) => void | Promise<void>;

/** Whose code an async context belongs to. */
type Owner =
  | { kind: "call"; extension: string; tool: string; fail: ((error: unknown) => void) | undefined }
  | { kind: "extension"; extension: string };

interface Guard {
  contexts: AsyncLocalStorage<Owner>;
}

const GUARD = Symbol.for("roster.tool-guard");
const GUARDED = Symbol.for("roster.tool-guard.guarded");

/** The extension `register` is, with every tool it registers guarded; marked so a test can tell. */
export function guarded(extension: string, register: Register): Register {
  const wrapped: Register = (pi) =>
    shared().contexts.run({ kind: "extension", extension }, () =>
      register(guardedApi(pi, extension)),
    );
  Object.defineProperty(wrapped, GUARDED, { value: extension });
  return wrapped;
}

/** The extension name `guarded` gave this default export, or undefined when it went around it. */
export function guardedName(exported: unknown): string | undefined {
  if (typeof exported !== "function") return undefined;
  const name: unknown = Reflect.get(exported, GUARDED);
  return typeof name === "string" ? name : undefined;
}

/** `pi` as the extension sees it: the same API, whose registerTool guards each tool's execute. */
function guardedApi(pi: ExtensionAPI, extension: string): ExtensionAPI {
  const registerTool = (tool: Tool): void => pi.registerTool(guardedTool(tool, extension));
  return new Proxy(pi, {
    get(target, key) {
      if (key === "registerTool") return registerTool;
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function guardedTool(tool: Tool, extension: string): Tool {
  return {
    ...tool,
    execute: (id, params, signal, onUpdate, ctx) =>
      new Promise((resolve, reject) => {
        // the call's own signal: aborted by pi, or by the guard when the call's work fails
        const stop = new AbortController();
        const own = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
        const owner: Owner = { kind: "call", extension, tool: tool.name, fail: undefined };
        const end = () => {
          owner.fail = undefined;
        };
        owner.fail = (error) => {
          end();
          stop.abort(error);
          reject(new Error(`the tool failed: ${reason(error)}`));
        };
        shared().contexts.run(owner, () => {
          try {
            Promise.resolve(tool.execute(id, params, own, onUpdate, ctx)).then(
              (result) => {
                end();
                resolve(result);
              },
              (error: unknown) => {
                end();
                reject(error);
              },
            );
          } catch (error) {
            end();
            reject(error);
          }
        });
      }),
  };
}

/** The one guard of this process, its handlers installed the first time. */
function shared(): Guard {
  const holder = globalThis as typeof globalThis & { [GUARD]?: Guard };
  const existing = holder[GUARD];
  if (existing) return existing;
  const guard: Guard = { contexts: new AsyncLocalStorage<Owner>() };
  holder[GUARD] = guard;
  process.on("uncaughtException", (error) => caught(guard, error, "uncaughtException"));
  process.on("unhandledRejection", (error) => caught(guard, error, "unhandledRejection"));
  return guard;
}

function caught(guard: Guard, error: unknown, event: "uncaughtException" | "unhandledRejection") {
  const owner = guard.contexts.getStore();
  if (owner?.kind === "call" && owner.fail) return owner.fail(error);
  if (owner) {
    const where =
      owner.kind === "call"
        ? `${owner.tool} (after its call ended)`
        : `the ${owner.extension} extension (outside any tool call)`;
    process.stderr.write(`roster: an error in ${where}, the run goes on: ${inspect(error)}\n`);
    return;
  }
  // not ours: as Node does with no handler, unless some other handler is there to decide
  if (process.listenerCount(event) > 1) return;
  process.stderr.write(`${inspect(error)}\n`);
  process.exit(1);
}

function reason(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
