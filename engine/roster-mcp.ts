/**
 * The box's tools as an MCP server ("roster", over stdio), for a worker whose
 * agent is Claude Code or Codex rather than pi. It loads the same files pi
 * loads (every top-level extensions/*.ts, so a dropped-in tool reaches all
 * three agents) and calls each with a stand-in for pi's ExtensionAPI that does
 * what our extensions use: registerTool, on, setActiveTools, getActiveTools;
 * any other member throws, naming the extension, rather than quietly doing nothing.
 *
 * The files are loaded with pi's own jiti and pi's aliases (the TypeBox the
 * extensions import is pi's `typebox`; the box has no `@sinclair/typebox`),
 * not by Node's type stripping: strip-only mode refuses TypeScript that pi
 * accepts (parameter properties, in extensions/lib), and a tool must load here
 * whenever it loads in pi. This file itself is plain enough to be stripped.
 *
 * What pi would add to the system prompt (before_agent_start handlers) is the
 * server's `instructions`; session_shutdown handlers run when stdin closes or
 * on SIGTERM. stdout carries only JSON-RPC: whatever an extension prints goes
 * to stderr. Nothing here enforces anything: the gateway and the action host do.
 *
 * Usage: node roster-mcp.ts <extension.ts | folder of them>... (engine/run-roster-mcp)
 */
import { type Dirent, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { TSchema } from "typebox";

// ---- stdout is the protocol's: everything else written there goes to stderr --
const toClient = process.stdout.write.bind(process.stdout);
const wire = new Writable({
  write(chunk: Buffer, _encoding, done) {
    toClient(chunk, (error) => done(error ?? null));
  },
});
// console.log/info/debug write through process.stdout.write, so they follow
process.stdout.write = process.stderr.write.bind(process.stderr);

const say = (line: string) => process.stderr.write(`roster-mcp: ${line}\n`);
const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

// ---- the loader pi uses: its jiti, its aliases ------------------------------
const fromPi = createRequire(import.meta.resolve("@earendil-works/pi-coding-agent"));
const typeboxValue = fromPi.resolve("typebox/value");
const TYPEBOX: Record<string, string> = {};
for (const [entry, path] of [
  ["", fromPi.resolve("typebox")],
  ["/compile", fromPi.resolve("typebox/compile")],
  ["/value", typeboxValue],
] as const) {
  TYPEBOX[`typebox${entry}`] = path;
  TYPEBOX[`@sinclair/typebox${entry}`] = path;
}
const { createJiti } = fromPi("jiti") as typeof import("jiti");
const ENGINE = createRequire(import.meta.url)("./package.json") as { version: string };
// the Value of the TypeBox the extensions' schemas come from: a schema checks here as it did there
const { Value } = (await import(
  pathToFileURL(typeboxValue).href
)) as typeof import("typebox/value");

// ---- what the extensions registered ------------------------------------------
type Execute = (
  id: string,
  params: unknown,
  signal: AbortSignal,
  onUpdate: (partial: unknown) => void,
  ctx: object,
) => unknown;
interface Tool {
  extension: string;
  name: string;
  title: string | undefined;
  description: string;
  parameters: TSchema;
  inputSchema: { type: "object" } & Record<string, unknown>;
  execute: Execute;
  prepareArguments: ((args: unknown) => unknown) | undefined;
  guidelines: string[];
  active: boolean;
}
type Handler = (event: object, ctx: object) => unknown;
interface Listener {
  extension: string;
  event: string;
  handler: Handler;
}
const EVENTS = ["before_agent_start", "session_shutdown"];
const tools = new Map<string, Tool>();
const listeners: Listener[] = [];
let changed = () => {};
const active = () => [...tools.values()].filter((tool) => tool.active);

/** `members`, where reading anything else throws with the extension's name. */
function strict<T extends object>(what: string, extension: string, members: T): T {
  return new Proxy(members, {
    get(target, key, receiver) {
      if (typeof key === "symbol" || key === "then" || Reflect.has(target, key))
        return Reflect.get(target, key, receiver);
      throw new Error(
        `the ${extension} extension uses ${what}.${key}, which the roster MCP server does not provide (it has ${Object.keys(target).join(", ")})`,
      );
    },
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A registered definition as served, or a throw naming what is wrong with it. */
function toTool(extension: string, definition: unknown): Tool {
  const where = `the ${extension} extension registers a tool`;
  if (!isRecord(definition) || typeof definition.name !== "string" || !definition.name)
    throw new Error(`${where} with no name`);
  const { name, description, parameters, execute, prepareArguments } = definition;
  if (typeof description !== "string") throw new Error(`${where} (${name}) with no description`);
  if (typeof execute !== "function") throw new Error(`${where} (${name}) with no execute`);
  const inputSchema: unknown = JSON.parse(JSON.stringify(parameters ?? null));
  if (!isRecord(inputSchema) || inputSchema.type !== "object")
    throw new Error(`${where} (${name}) whose parameters are not an object schema`);
  const guidelines = Array.isArray(definition.promptGuidelines)
    ? definition.promptGuidelines.filter((line): line is string => typeof line === "string")
    : [];
  return {
    extension,
    name,
    title: typeof definition.label === "string" ? definition.label : undefined,
    description,
    parameters: parameters as TSchema,
    inputSchema: { ...inputSchema, type: "object" },
    execute: execute as Execute,
    prepareArguments:
      typeof prepareArguments === "function"
        ? (prepareArguments as (args: unknown) => unknown)
        : undefined,
    guidelines,
    active: definition.defaultActive !== false,
  };
}

/** An extension's registrations while it loads: they land only if it loads. */
interface Pending {
  loading: boolean;
  skipped: boolean;
  tools: Tool[];
}

/** pi as one extension sees it. */
function standIn(extension: string, pending: Pending) {
  return strict("pi", extension, {
    registerTool(definition: unknown): void {
      if (pending.skipped)
        throw new Error(`the ${extension} extension failed to load: no tools from it`);
      const tool = toTool(extension, definition);
      const owner = tools.get(tool.name) ?? pending.tools.find((t) => t.name === tool.name);
      if (owner)
        throw new Error(
          `the ${extension} extension registers ${tool.name}, which the ${owner.extension} extension already did`,
        );
      if (pending.loading) pending.tools.push(tool);
      else {
        tools.set(tool.name, tool);
        changed();
      }
    },
    on(event: string, handler: Handler): () => void {
      if (!EVENTS.includes(event))
        say(
          `the ${extension} extension listens for ${event}, which this server never sends (only ${EVENTS.join(", ")})`,
        );
      const listener = { extension, event, handler };
      listeners.push(listener);
      return () => {
        const at = listeners.indexOf(listener);
        if (at >= 0) listeners.splice(at, 1);
      };
    },
    setActiveTools(names: string[]): void {
      for (const tool of tools.values()) tool.active = names.includes(tool.name);
      changed();
    },
    getActiveTools: (): string[] => active().map((t) => t.name),
  });
}

/** What a handler or a tool call gets as pi's context: the little a server can say. */
function context(extension: string, signal: AbortSignal | undefined) {
  return strict("ctx", extension, {
    cwd: process.cwd(),
    hasUI: false,
    signal,
    shutdown: () => void shutdown(),
  });
}

// ---- loading ------------------------------------------------------------------
/** The files to load: each argument, a folder standing for its top-level *.ts (as run-pi's glob). */
function extensionFiles(args: string[]): string[] {
  return args.flatMap((arg) => {
    const path = resolve(arg);
    if (!statSync(path, { throwIfNoEntry: false }))
      throw new Error(`no such file or folder: ${arg}`);
    if (!statSync(path).isDirectory()) return [path];
    return readdirSync(path, { withFileTypes: true })
      .filter((entry: Dirent) => entry.isFile() && entry.name.endsWith(".ts"))
      .map((entry) => join(path, entry.name))
      .sort();
  });
}

async function loadAll(files: string[]): Promise<void> {
  for (const file of files) {
    const extension = basename(file, ".ts");
    const pending: Pending = { loading: true, skipped: false, tools: [] };
    const before = listeners.length;
    try {
      // a fresh jiti per file with no module cache, as pi does, and pi's transpile cache
      // ($TMPDIR/jiti; by default jiti would pick the read-only node_modules beside this file)
      const fsCache = join(tmpdir(), "jiti");
      const jiti = createJiti(import.meta.url, { moduleCache: false, alias: TYPEBOX, fsCache });
      const factory = await jiti.import(file, { default: true });
      if (typeof factory !== "function") throw new Error("its default export is not a function");
      await factory(standIn(extension, pending));
      for (const tool of pending.tools) tools.set(tool.name, tool);
    } catch (error) {
      pending.skipped = true;
      listeners.splice(before);
      say(`the ${extension} extension (${file}) failed to load and is skipped: ${reason(error)}`);
    } finally {
      pending.loading = false;
    }
  }
}

/** What pi's system prompt would have gained: before_agent_start handlers run on an empty one. */
async function instructions(): Promise<string> {
  let prompt = "";
  for (const { extension, event, handler } of [...listeners]) {
    if (event !== "before_agent_start") continue;
    try {
      const start = strict("event", extension, { type: event, systemPrompt: prompt });
      const result = await handler(start, context(extension, undefined));
      if (isRecord(result) && typeof result.systemPrompt === "string") prompt = result.systemPrompt;
      if (isRecord(result) && result.message !== undefined)
        say(
          `the ${extension} extension's before_agent_start returns a message, which no agent gets here`,
        );
    } catch (error) {
      say(`the ${extension} extension's before_agent_start failed: ${reason(error)}`);
    }
  }
  const guidelines = active().flatMap((t) => t.guidelines);
  if (guidelines.length) prompt += `\n\nGuidelines:\n${guidelines.map((g) => `- ${g}`).join("\n")}`;
  return prompt.trim();
}

// ---- calls --------------------------------------------------------------------
const failed = (text: string): CallToolResult => ({
  content: [{ type: "text", text }],
  isError: true,
});

/** Why `params` don't fit the tool's schema, naming each field; undefined when they do. */
function misfit(tool: Tool, params: unknown): string | undefined {
  let problems: string[];
  try {
    if (Value.Check(tool.parameters, params)) return undefined;
    problems = Value.Errors(tool.parameters, params).map((error) => {
      const field = error.instancePath.slice(1).split("/").join(".");
      const missing: unknown = Reflect.get(error.params, "requiredProperties");
      if (error.keyword === "required" && Array.isArray(missing))
        return missing.map((name) => `${field ? `${field}.` : ""}${name}: is required`).join("; ");
      return `${field || "(the arguments)"}: ${error.message}`;
    });
  } catch (error) {
    problems = [`its schema can't be checked (${reason(error)})`];
  }
  return `invalid arguments for ${tool.name}: ${[...new Set(problems)].slice(0, 8).join("; ")}`;
}

/** pi's tool result ({content, details, isError}) as MCP's; details are pi's UI's, not the model's. */
function toResult(tool: Tool, result: unknown): CallToolResult {
  if (!isRecord(result) || !Array.isArray(result.content))
    return failed(`${tool.name} returned no content (the ${tool.extension} extension's bug)`);
  const content = result.content.map((part: unknown): CallToolResult["content"][number] => {
    if (isRecord(part) && part.type === "text" && typeof part.text === "string")
      return { type: "text", text: part.text };
    if (isRecord(part) && part.type === "image" && typeof part.data === "string")
      return { type: "image", data: part.data, mimeType: String(part.mimeType ?? "image/png") };
    const kind = isRecord(part) ? String(part.type) : typeof part;
    return { type: "text", text: `[a part of type ${kind} that this server can't pass on]` };
  });
  return { content, ...(result.isError === true ? { isError: true } : {}) };
}

function serve(server: Server): void {
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: active().map((tool) => ({
      name: tool.name,
      ...(tool.title ? { title: tool.title } : {}),
      description: tool.description,
      inputSchema: tool.inputSchema,
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools.get(request.params.name);
    if (!tool?.active) return failed(`there is no tool named ${request.params.name}`);
    try {
      const args = request.params.arguments ?? {};
      const params = tool.prepareArguments ? tool.prepareArguments(args) : args;
      const wrong = misfit(tool, params);
      if (wrong) return failed(wrong);
      const token = request.params._meta?.progressToken;
      let step = 0;
      // a tool's partial results are progress, when the client asked for it
      const onUpdate = (partial: unknown) => {
        if (token === undefined) return;
        const content = isRecord(partial) && Array.isArray(partial.content) ? partial.content : [];
        const text = content.find((part: unknown) => isRecord(part) && part.type === "text");
        const message = isRecord(text) ? String(text.text).slice(0, 2000) : undefined;
        extra
          .sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: ++step, ...(message ? { message } : {}) },
          })
          .catch(() => undefined);
      };
      const id = `mcp-${String(extra.requestId)}`;
      const ctx = context(tool.extension, extra.signal);
      return toResult(tool, await tool.execute(id, params, extra.signal, onUpdate, ctx));
    } catch (error) {
      return failed(reason(error));
    }
  });
}

// ---- the end ------------------------------------------------------------------
const SHUTDOWN_MS = 10_000;
let ending: Promise<void> | undefined;

/** session_shutdown handlers, given SHUTDOWN_MS at most (a hung one must not keep the box up), then the end. */
function shutdown(): Promise<void> {
  ending ??= (async () => {
    const handlers = listeners.filter((listener) => listener.event === "session_shutdown");
    const run = Promise.all(
      handlers.map(async ({ extension, handler }) => {
        try {
          const event = strict("event", extension, { type: "session_shutdown", reason: "quit" });
          await handler(event, context(extension, undefined));
        } catch (error) {
          say(`the ${extension} extension's session_shutdown failed: ${reason(error)}`);
        }
      }),
    );
    const late = new Promise<void>((done) => setTimeout(done, SHUTDOWN_MS).unref());
    await Promise.race([run, late]);
    process.exit(0);
  })();
  return ending;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (!args.length) {
    say("name the extensions to serve: node roster-mcp.ts <file.ts | folder>...");
    process.exit(2);
  }
  let files: string[];
  try {
    files = extensionFiles(args);
  } catch (error) {
    say(reason(error));
    process.exit(2);
  }
  await loadAll(files);
  const told = await instructions();
  const server = new Server(
    { name: "roster", version: ENGINE.version },
    { capabilities: { tools: { listChanged: true } }, ...(told ? { instructions: told } : {}) },
  );
  serve(server);
  changed = () => void server.sendToolListChanged().catch(() => undefined);
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const)
    process.on(signal, () => void shutdown());
  for (const end of ["end", "close"]) process.stdin.on(end, () => void shutdown());
  wire.on("error", () => void shutdown());
  await server.connect(new StdioServerTransport(process.stdin, wire));
  say(`serving ${active().length} tools from ${files.length} files`);
}

await main();
