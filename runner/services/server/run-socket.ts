import { chmod, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, userFailure } from "../../ground/errors.ts";
import type { AheadClones } from "../../work/repos/clone.ts";
import type { ReadyStart } from "../../work/runs/run-request.ts";
import { TERM_CHANNEL_PATTERN } from "../chat/terminal/ids.ts";
import { runSocketPath } from "./state.ts";

/**
 * `roster run` and `roster box exec` handed to a running server: the server
 * already holds the gateway, an engine connection and warm modules, so a run
 * costs it a box and little else. It listens on a Unix socket in the state
 * folder (0600: the server's own user only; never mounted into a box). One
 * request per box: `POST /runs` with the run's worker, prompt, ceiling and
 * view, or `POST /exec` with the worker, command and timeout (or `POST
 * /turns`: a linked terminal's line, a turn of its group's session). The answer is a
 * stream of JSON lines — `{out}` for the run's stdout, `{note}` for its
 * stderr, then one final line: `{exit, run}` for a run, `{exit, envelope}`
 * for an exec, or `{error, exit}` when no box could start. A client that goes
 * away (Ctrl-C, killed) aborts its box: it is stopped and the record says so.
 * A run's final line goes out, and its answer ends, as soon as its box has
 * exited and how it ended is known; the store snapshot and the record's last
 * write follow here after (the worker's next run waits for them).
 */

const WorkerName = Type.String({ pattern: "^[a-z0-9][a-z0-9_-]*$", maxLength: 64 });

export const RunRequest = Type.Object(
  {
    worker: WorkerName,
    prompt: Type.String({ minLength: 1, maxLength: 1024 * 1024 }),
    // bounded by the run owner, which refuses in the same words on every path
    ceiling_min: Type.Number(),
    json: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type RunRequest = Static<typeof RunRequest>;

export const ExecRequest = Type.Object(
  {
    worker: WorkerName,
    command: Type.String({ minLength: 1, maxLength: 1024 * 1024 }),
    timeout_secs: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);
export type ExecRequest = Static<typeof ExecRequest>;

/** A line typed in `roster talk` on a terminal linked to other surfaces: a turn of their one session. */
export const TurnRequest = Type.Object(
  {
    worker: WorkerName,
    channel: Type.String({ pattern: TERM_CHANNEL_PATTERN }),
    author: Type.String({ minLength: 1, maxLength: 128 }),
    text: Type.String({ minLength: 1, maxLength: 64 * 1024 }),
  },
  { additionalProperties: false },
);
export type TurnRequest = Static<typeof TurnRequest>;

const MAX_BODY_BYTES = 2 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 10_000;

export interface RunSocket {
  /** Boxes handed over and not yet finished: they count toward the server's cap. */
  active(): number;
  /** Stops taking boxes, aborts those in flight and waits until their records are final (bookkeeping too). */
  close(): Promise<void>;
}

type Send = (line: Record<string, unknown>) => void;
interface Job {
  env: NodeJS.ProcessEnv;
  paths: RosterPaths;
  send: Send;
  signal: AbortSignal;
  takeReady: ((worker: string) => Promise<ReadyStart | undefined>) | undefined;
  takeReadyExec: ((worker: string) => Promise<ReadyStart | undefined>) | undefined;
  spares: AheadClones | undefined;
  turn: RunSocketOptions["turn"];
  /** Work that follows the answer (a run's bookkeeping): the server waits for it when it stops. */
  after: (work: Promise<unknown>) => void;
}

/** A route: the request it accepts, checked against its schema, and the box it starts. */
interface Route {
  accept(body: unknown): ((job: Job) => Promise<void>) | { refusal: string };
}

function route<T extends TSchema>(
  label: string,
  schema: T,
  start: (body: Static<T>, job: Job) => Promise<void>,
): Route {
  return {
    accept(body) {
      if (Value.Check(schema, body)) return (job) => start(body, job);
      const first = Value.Errors(schema, body).First();
      return {
        refusal: `bad ${label} request: ${first?.path || "(body)"} ${first?.message ?? ""}`,
      };
    },
  };
}

/** What every box handed over shares: the server's roots and env, the client's abort, its notes. */
function forJob(job: Job, worker: string) {
  return {
    paths: job.paths,
    worker,
    signal: job.signal,
    env: job.env,
    note: (text: string) => job.send({ note: text }),
    ...(job.spares ? { spares: job.spares } : {}),
  };
}

const routes = new Map<string, Route>([
  [
    "/runs",
    route("run", RunRequest, async (run, job) => {
      const { runOneShot } = await import("../../work/runs/oneshot.ts");
      const result = await runOneShot({
        ...forJob(job, run.worker),
        prompt: run.prompt,
        ceiling_min: run.ceiling_min,
        json: run.json,
        write: (text) => job.send({ out: text }),
        ...(job.takeReady ? { takeReady: job.takeReady } : {}),
        answerFirst: true,
      });
      job.after(result.settled);
      const record = result.record;
      job.send({
        exit: result.exitCode,
        run: record
          ? {
              id: record.id,
              state: record.state,
              ended_by: record.ended_by,
              exit_code: record.exit_code,
            }
          : null,
      });
    }),
  ],
  [
    "/exec",
    route("exec", ExecRequest, async (exec, job) => {
      const { runExec } = await import("../../work/runs/exec.ts");
      const { execExitCode } = await import("../../work/runs/exec-envelope.ts");
      const envelope = await runExec({
        ...forJob(job, exec.worker),
        command: exec.command,
        timeoutSecs: exec.timeout_secs,
        ...(job.takeReadyExec ? { takeReady: job.takeReadyExec } : {}),
      });
      job.send({ exit: execExitCode(envelope), envelope });
    }),
  ],
  [
    "/turns",
    route("turn", TurnRequest, async (turn, job) => {
      if (!job.turn) throw new Error("this server takes no turns from a terminal");
      await job.turn(turn, job.send);
    }),
  ],
]);

export interface RunSocketOptions {
  paths: RosterPaths;
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
  /** How long a client may take to send its whole request (default 10 s). */
  requestTimeoutMs?: number;
  /** The server's ready boxes: a run takes one when there is one. */
  takeReady?: (worker: string) => Promise<ReadyStart | undefined>;
  /** And `box exec` takes one of those made for commands. */
  takeReadyExec?: (worker: string) => Promise<ReadyStart | undefined>;
  /** The server's clones made ahead: a run's gated repos come from them when current. */
  spares?: AheadClones;
  /** A linked terminal's turn, in its group's one session (handed-turn.ts). */
  turn?: (request: TurnRequest, send: (line: Record<string, unknown>) => void) => Promise<void>;
}

/**
 * The request's body as JSON (undefined when it is not JSON); nothing once it
 * passes MAX_BODY_BYTES, when the client has had its 413.
 */
async function readBody(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ body: unknown } | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.writeHead(413).end();
      return undefined;
    }
    chunks.push(chunk);
  }
  try {
    return { body: JSON.parse(Buffer.concat(chunks).toString("utf8")) };
  } catch {
    return { body: undefined };
  }
}

/**
 * Starts an accepted box, its lines streamed to the client; `answered` once
 * the answer has ended, `done` once what follows it has too.
 */
function startJob(
  res: ServerResponse,
  start: (job: Job) => Promise<void>,
  options: RunSocketOptions,
): { abort: AbortController; answered: Promise<void>; done: Promise<void> } {
  res.writeHead(200, { "content-type": "application/x-ndjson" });
  const send: Send = (line) => {
    if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(line)}\n`);
  };
  const abort = new AbortController();
  // the client is gone before its box ended: stop the box (and finish its record)
  res.on("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  const job: Job = {
    paths: options.paths,
    env: options.env,
    send,
    signal: abort.signal,
    takeReady: options.takeReady,
    takeReadyExec: options.takeReadyExec,
    spares: options.spares,
    turn: options.turn,
    after: (work) => following.push(work),
  };
  const following: Promise<unknown>[] = [];
  const answered = (async () => {
    try {
      await start(job);
    } catch (error) {
      send({
        error: errorMessage(error),
        exit: userFailure(error)?.exitCode ?? 1,
      });
    } finally {
      res.end();
    }
  })();
  const done = answered.then(async () => {
    for (const work of following)
      await work.catch((error: unknown) =>
        options.note(`run socket: a run's bookkeeping failed: ${errorMessage(error)}`),
      );
  });
  return { abort, answered, done };
}

export async function serveRuns(options: RunSocketOptions): Promise<RunSocket> {
  const path = runSocketPath(options.paths);
  // a socket file left by a server that died: no live server holds it (the caller checked)
  await rm(path, { force: true });
  const inFlight = new Set<{
    abort: AbortController;
    done: Promise<void>;
    box: boolean;
    answered: boolean;
  }>();

  const timeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // the stalled-request sweep must run often enough for the timeout to mean something
  const server = createServer(
    { connectionsCheckingInterval: Math.min(1000, timeoutMs) },
    (req, res) => {
      void handle(req, res).catch((error: unknown) => {
        options.note(`run socket: ${errorMessage(error)}`);
        res.destroy();
      });
    },
  );
  // a client that connects and never finishes its request is dropped, not kept
  // forever; the run itself (the response) has no such limit: its ceiling bounds it
  server.headersTimeout = timeoutMs;
  server.requestTimeout = timeoutMs;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = req.method === "POST" && req.url ? routes.get(req.url) : undefined;
    if (!route) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}\n');
      return;
    }
    const read = await readBody(req, res);
    if (!read) return;
    const start = route.accept(read.body);
    if (typeof start !== "function") {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(`${JSON.stringify({ error: start.refusal, exit: 2 })}\n`);
      return;
    }
    // a turn runs in a session's box, which the server counts already
    const job = startJob(res, start, options);
    const entry = { abort: job.abort, done: job.done, box: req.url !== "/turns", answered: false };
    inFlight.add(entry);
    // a run answered has no box left: its bookkeeping does not count toward the cap
    await job.answered;
    entry.answered = true;
    await entry.done;
    inFlight.delete(entry);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
  return {
    active: () => [...inFlight].filter((entry) => entry.box && !entry.answered).length,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const entry of inFlight) entry.abort.abort();
      await Promise.all([...inFlight].map((entry) => entry.done));
      server.closeAllConnections();
      await closed;
      await rm(path, { force: true });
    },
  };
}
