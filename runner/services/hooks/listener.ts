import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { WebhookRule } from "../../ground/config/webhook-schema.ts";
import { errorMessage } from "../../ground/errors.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";
import { fileRelay } from "../../work/tasks/relay.ts";
import { TokenBucket } from "./bucket.ts";
import { SeenDeliveries } from "./deliveries.ts";
import { deliveryText } from "./delivery-text.ts";
import { secretOf, secretProblem } from "./secret.ts";
import { verify } from "./signature.ts";

/**
 * `POST /hooks/<name>` for each `[[webhook]]` in org.toml (docs/tasks.md#webhooks).
 * A delivery is taken in this order, each step answering before the next
 * reads more of it: the path (404) and method (405); the body, read up to
 * MAX_BODY_BYTES (413 above, by its Content-Length or as it arrives); the
 * signature with the hook's secret, read from the vault at each delivery so a
 * new secret counts at once (401; 503 while the vault has none); GitHub's
 * ping and events the hook doesn't take (200, nothing filed); a delivery id
 * filed before (200 duplicate); the hook's rate (429, Retry-After); then the
 * delivery is filed as a relayed task for the hook's worker, quoted as
 * untrusted content (202 with the task's id). Each delivery, whatever became
 * of it, is one line in audit/webhooks.jsonl; refusals, which anyone can
 * send, up to REFUSALS_PER_MINUTE a hook, the rest counted on the next line.
 *
 * No box reaches this port (the door closes it, closed-ports.ts); a sender
 * on the internet reaches it through a proxy the operator puts in front.
 */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deliveries filed per minute per hook unless `per_minute` says otherwise. */
export const DEFAULT_PER_MINUTE = 30;

export interface RunningHooks {
  url: string;
  close(): Promise<void>;
}

interface Hook {
  rule: WebhookRule;
  bucket: TokenBucket;
  seen: SeenDeliveries;
  /** Audit lines of refused deliveries: anyone can send those, so they are bounded too. */
  refusals: TokenBucket;
  /** Refusals not written since the last line that was: the next one says how many. */
  unwritten: number;
  /** The missing secret was said on the log (once until it is there). */
  secretSaid: boolean;
}

/** Refused deliveries written to the audit per hook and minute; past it they are counted. */
const REFUSALS_PER_MINUTE = 600;

/** What one delivery came to: its answer and its audit line. */
interface Outcome {
  status: number;
  outcome: "accepted" | "duplicate" | "ignored" | "refused";
  reason?: string;
  delivery?: string;
  event?: string;
  action?: string;
  task_id?: string;
  headers?: Record<string, string>;
}

export async function serveHooks(options: {
  paths: RosterPaths;
  listen: ListenAddress;
  hooks: readonly WebhookRule[];
  note: (text: string) => void;
}): Promise<RunningHooks> {
  const { paths, note } = options;
  const hooks = new Map<string, Hook>(
    options.hooks.map((rule) => [
      rule.name,
      {
        rule,
        bucket: new TokenBucket(rule.per_minute ?? DEFAULT_PER_MINUTE),
        seen: SeenDeliveries.forHook(paths, rule.name),
        refusals: new TokenBucket(REFUSALS_PER_MINUTE),
        unwritten: 0,
        secretSaid: false,
      },
    ]),
  );
  const auditFile = join(paths.audit, "webhooks.jsonl");
  const server: Server = createServer((req, res) => {
    const name = /^\/hooks\/([^/?#]+)(\?.*)?$/.exec(req.url ?? "")?.[1] ?? "";
    const hook = hooks.get(name);
    const started = Date.now();
    void take(req, hook, paths, note)
      .catch(
        (error: unknown): Outcome => ({
          status: 500,
          outcome: "refused",
          reason: `not filed: ${errorMessage(error)}`,
        }),
      )
      .then((outcome) => {
        answer(res, outcome);
        // an unknown path is no hook's delivery: answered, never recorded
        if (hook) record(hook, outcome, started, req.socket.remoteAddress ?? "");
      })
      .catch((error: unknown) =>
        note(`webhook ${name}: the delivery was not recorded: ${errorMessage(error)}`),
      );
  });
  /** The delivery's audit line, and the server's log line for one filed. */
  const record = (hook: Hook, outcome: Outcome, started: number, remote: string) => {
    const { headers: _headers, ...said } = outcome;
    if (outcome.outcome === "refused" && hook.refusals.take() !== undefined) {
      hook.unwritten += 1;
      return;
    }
    const unwritten = hook.unwritten;
    hook.unwritten = 0;
    appendJsonLine(
      auditFile,
      {
        ts: new Date(started).toISOString(),
        hook: hook.rule.name,
        worker: hook.rule.worker,
        ...said,
        remote,
        ...(unwritten ? { refusals_not_written_before: unwritten } : {}),
      },
      { file: 0o600, dir: 0o700 },
    );
    if (outcome.outcome === "accepted")
      note(
        `webhook ${hook.rule.name}: delivery ${outcome.delivery} → ${outcome.task_id} for ${hook.rule.worker}`,
      );
  };
  // a sender that trickles its headers or body is cut off, never waited on
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/hooks/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answer(res: ServerResponse, outcome: Outcome): void {
  const body =
    outcome.outcome === "accepted"
      ? { status: "accepted", task_id: outcome.task_id }
      : { status: outcome.outcome, ...(outcome.reason ? { reason: outcome.reason } : {}) };
  res.writeHead(outcome.status, {
    "content-type": "application/json",
    ...(outcome.status === 413 ? { connection: "close" } : {}),
    ...outcome.headers,
  });
  res.end(`${JSON.stringify(body)}\n`);
}

async function take(
  req: IncomingMessage,
  hook: Hook | undefined,
  paths: RosterPaths,
  note: (text: string) => void,
): Promise<Outcome> {
  if (!hook) {
    req.resume();
    return { status: 404, outcome: "refused", reason: "no such hook" };
  }
  if (req.method !== "POST") {
    req.resume();
    return {
      status: 405,
      outcome: "refused",
      reason: "deliveries are POSTed",
      headers: { allow: "POST" },
    };
  }
  const body = await readBounded(req);
  if (!body)
    return { status: 413, outcome: "refused", reason: `the body is over ${MAX_BODY_BYTES} bytes` };
  const { rule } = hook;
  const key = secretOf(paths, rule.secret);
  hook.secretSaid &&= key === undefined;
  if (key === undefined) {
    if (!hook.secretSaid) note(`webhook ${rule.name}: ${secretProblem(paths, rule.secret)}`);
    hook.secretSaid = true;
    return { status: 503, outcome: "refused", reason: "this hook's secret is not set up" };
  }
  const verdict = verify(rule.scheme, key, req.headers, body);
  if (!verdict.ok) return { status: 401, outcome: "refused", reason: verdict.reason };
  const { delivery, event, keys } = verdict;
  const seen = { delivery, ...(event ? { event } : {}) };
  if (event === "ping") return { status: 200, outcome: "ignored", reason: "ping", ...seen };
  if (event && rule.events && !rule.events.includes("*") && !rule.events.includes(event))
    return {
      status: 200,
      outcome: "ignored",
      reason: `event "${event}" is not in events`,
      ...seen,
    };
  if (keys.some((key) => hook.seen.has(key)))
    return { status: 200, outcome: "duplicate", reason: "this delivery was filed before", ...seen };
  const wait = hook.bucket.take();
  if (wait !== undefined)
    return {
      status: 429,
      outcome: "refused",
      reason: `over ${rule.per_minute ?? DEFAULT_PER_MINUTE} deliveries a minute`,
      headers: { "retry-after": String(wait) },
      ...seen,
    };
  const said = deliveryText(rule, delivery, event, req.headers, body);
  for (const key of keys) hook.seen.hold(key);
  try {
    const { task } = await fileRelay(paths, {
      worker: rule.worker,
      message: said.message,
      from: said.from,
      ceilingMin: rule.ceiling,
      by: `hook:${rule.name}`,
    });
    await hook.seen.remember(keys);
    return {
      status: 202,
      outcome: "accepted",
      task_id: task.id,
      ...seen,
      ...(said.action ? { action: said.action } : {}),
    };
  } catch (error) {
    for (const key of keys) hook.seen.release(key);
    throw error;
  }
}

/** The body, or undefined when it is (or says it will be) over MAX_BODY_BYTES. */
function readBounded(req: IncomingMessage): Promise<Buffer | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        over = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    let ended = false;
    req.on("end", () => {
      ended = true;
      if (!over) resolve(Buffer.concat(chunks));
    });
    // a sender that hangs up mid-body settles it (an error, or only a close): nothing
    // waits on a closed socket, and the audit line says what happened
    const hungUp = (why: string) =>
      reject(new Error(`the sender hung up before its body ended (${why})`));
    req.on("error", (error) => hungUp(errorMessage(error)));
    req.on("close", () => {
      if (!ended && !over) hungUp("closed");
    });
  });
}
