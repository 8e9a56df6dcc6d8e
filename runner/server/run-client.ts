import { existsSync } from "node:fs";
import { request } from "node:http";
import type { RosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";
import { type RunRequest, runSocketPath } from "./run-socket.ts";
import { readServerState } from "./state.ts";

/**
 * The `roster run` side of a handed-off run (see run-socket.ts): sends the run
 * to the running server and relays what it streams back. Resolves undefined
 * when no server takes it (none running, or a socket left by one that died):
 * the caller then runs the box itself. Aborting (Ctrl-C) closes the
 * connection, which stops the run on the server.
 */
export interface HandedRun {
  exitCode: number;
  run: { id: string; state: string; ended_by?: string; exit_code?: number } | null;
}

export function runThroughServer(
  paths: RosterPaths,
  run: RunRequest,
  io: { write(text: string): void; note(text: string): void; signal: AbortSignal },
): Promise<HandedRun | undefined> {
  const socketPath = runSocketPath(paths);
  if (!existsSync(socketPath) || !readServerState(paths)) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    let answered = false;
    let result: HandedRun | undefined;
    let failure: RosterError | undefined;
    const req = request({
      socketPath,
      path: "/runs",
      method: "POST",
      headers: { "content-type": "application/json" },
    });
    // Ctrl-C: closing the connection is what stops the run on the server
    const onAbort = () => {
      req.destroy();
      resolve({ exitCode: 130, run: null });
    };
    io.signal.addEventListener("abort", onAbort, { once: true });
    req.on("error", (error: NodeJS.ErrnoException) => {
      io.signal.removeEventListener("abort", onAbort);
      if (io.signal.aborted) resolve({ exitCode: 130, run: null });
      // nobody there after all: run it here
      else if (!answered) resolve(undefined);
      else reject(new RosterError(`the server stopped answering mid-run: ${error.message}`));
    });
    req.on("response", (response) => {
      answered = true;
      let pending = "";
      const onLine = (line: string) => {
        if (!line.trim()) return;
        const message = JSON.parse(line) as {
          out?: string;
          note?: string;
          exit?: number;
          run?: HandedRun["run"];
          error?: string;
        };
        if (typeof message.out === "string") io.write(message.out);
        else if (typeof message.note === "string") io.note(message.note);
        else if (typeof message.error === "string")
          failure = new RosterError(message.error, { exitCode: message.exit ?? 1 });
        else if (typeof message.exit === "number")
          result = { exitCode: message.exit, run: message.run ?? null };
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
        else if (result) resolve(result);
        else if (io.signal.aborted) resolve({ exitCode: 130, run: null });
        else reject(new RosterError("the server ended the run without saying how it went"));
      });
      response.on("error", () => undefined);
    });
    req.end(JSON.stringify(run));
  });
}
