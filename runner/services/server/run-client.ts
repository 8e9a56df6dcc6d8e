import { existsSync } from "node:fs";
import { type RequestOptions, request } from "node:http";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import type { ExecEnvelope } from "../../work/runs/exec-envelope.ts";
import type { ExecRequest, RunRequest, TurnRequest } from "./run-socket.ts";
import { readServerState, runSocketPath } from "./state.ts";

/**
 * The CLI side of a box handed to the running server (see run-socket.ts):
 * sends the request and relays what the server streams back. Resolves
 * undefined when no server takes it (none running, or a socket left by one
 * that died): the caller then starts the box itself. Aborting (Ctrl-C)
 * closes the connection, which stops the box on the server.
 */
export interface HandedRun {
  exitCode: number;
  run: { id: string; state: string; ended_by?: string; exit_code?: number } | null;
}

interface Io {
  write(text: string): void;
  note(text: string): void;
  signal: AbortSignal;
}

/** The last line of a handed box, or "aborted" when the caller's signal ended it first. */
type Final = Record<string, unknown> | "aborted";

function handToServer(
  paths: RosterPaths,
  route: "/runs" | "/exec" | "/turns",
  body: RunRequest | ExecRequest | TurnRequest,
  io: Io,
): Promise<Final | undefined> {
  const socketPath = runSocketPath(paths);
  if (!existsSync(socketPath) || !readServerState(paths)) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    let answered = false;
    let final: Record<string, unknown> | undefined;
    let failure: RosterError | undefined;
    // TLS's name, meaningless on a Unix socket: given, Node's agent does not work one out
    // by testing "localhost" against its IPv6 pattern, whose first match compiles it
    // (about 8 ms of every handed command's start here). Node reads it; its types omit it.
    const options: RequestOptions & { servername: string } = {
      socketPath,
      path: route,
      method: "POST",
      headers: { "content-type": "application/json" },
      servername: "",
    };
    const req = request(options);
    // Ctrl-C: closing the connection is what stops the box on the server
    const onAbort = () => {
      req.destroy();
      resolve("aborted");
    };
    io.signal.addEventListener("abort", onAbort, { once: true });
    req.on("error", (error: NodeJS.ErrnoException) => {
      io.signal.removeEventListener("abort", onAbort);
      if (io.signal.aborted) resolve("aborted");
      // nobody there after all: start it here
      else if (!answered) resolve(undefined);
      else reject(new RosterError(`the server stopped answering mid-run: ${error.message}`));
    });
    req.on("response", (response) => {
      answered = true;
      let pending = "";
      const onLine = (line: string) => {
        if (!line.trim()) return;
        const message = JSON.parse(line) as Record<string, unknown>;
        if (typeof message.out === "string") io.write(message.out);
        else if (typeof message.note === "string") io.note(message.note);
        else if (typeof message.error === "string")
          failure = new RosterError(message.error, {
            exitCode: typeof message.exit === "number" ? message.exit : 1,
          });
        else if (typeof message.exit === "number") final = message;
      };
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        pending += chunk;
        let newline = pending.indexOf("\n");
        while (newline >= 0) {
          onLine(pending.slice(0, newline));
          pending = pending.slice(newline + 1);
          newline = pending.indexOf("\n");
        }
      });
      response.on("end", () => {
        io.signal.removeEventListener("abort", onAbort);
        onLine(pending);
        if (failure) reject(failure);
        else if (final) resolve(final);
        else if (io.signal.aborted) resolve("aborted");
        else reject(new RosterError("the server ended the run without saying how it went"));
      });
      response.on("error", () => undefined);
    });
    req.end(JSON.stringify(body));
  });
}

/** `roster run` through the server. */
export async function runThroughServer(
  paths: RosterPaths,
  run: RunRequest,
  io: Io,
): Promise<HandedRun | undefined> {
  const final = await handToServer(paths, "/runs", run, io);
  if (final === undefined) return undefined;
  if (final === "aborted") return { exitCode: 130, run: null };
  return {
    exitCode: final.exit as number,
    run: (final.run ?? null) as HandedRun["run"],
  };
}

/** `roster box exec` through the server: its envelope, or undefined when no server took it. */
export async function execThroughServer(
  paths: RosterPaths,
  exec: ExecRequest,
  io: Omit<Io, "write">,
): Promise<ExecEnvelope | undefined> {
  const started = Date.now();
  const final = await handToServer(paths, "/exec", exec, { ...io, write: () => undefined });
  if (final === undefined) return undefined;
  if (final === "aborted")
    return {
      status: "error",
      stdout: "",
      stderr: "",
      exit_code: null,
      duration_ms: Date.now() - started,
      error: "interrupted; the box was stopped",
    };
  const envelope = final.envelope;
  if (typeof envelope !== "object" || envelope === null)
    throw new RosterError("the server ended the exec without its envelope");
  return envelope as ExecEnvelope;
}

/**
 * A linked terminal's line, a turn of its group's session on the server:
 * resolves once the turn is done (what the worker sent the terminal has been
 * written), or undefined when no server took it.
 */
export async function turnThroughServer(
  paths: RosterPaths,
  turn: TurnRequest,
  io: Io,
): Promise<{ runId: string | undefined; modelError: string | undefined } | undefined> {
  const final = await handToServer(paths, "/turns", turn, io);
  if (final === undefined) return undefined;
  if (final === "aborted") return { runId: undefined, modelError: undefined };
  const run = final.run as { id?: unknown } | undefined;
  return {
    runId: typeof run?.id === "string" ? run.id : undefined,
    modelError: typeof final.model_error === "string" ? final.model_error : undefined,
  };
}
