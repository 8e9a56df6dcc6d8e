import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuditLog } from "../audit/audit.ts";
import { CONTROL_HEADER, carriesKey, controlKey } from "../doors/control-key.ts";
import type { Identity } from "../doors/identity.ts";
import { DoorError } from "../doors/run-doors.ts";
import { denied, sendRefusal } from "../judging/refusals.ts";
import type { ConfigStatus } from "../settings/config-source.ts";
import { requestFacts } from "./admission.ts";

/**
 * What the gateway answers the host alone, on its loopback port: /healthz
 * (is it up, which deployment, which config judges and which it refused), /doors/<run id> (POST opens a run's own
 * door and answers its folder; DELETE closes it), and /metrics (the door's
 * numbers, for the server's own /metrics). A box reaches this port too,
 * through its door, and these answers name host paths or change what boxes
 * reach: anyone not on loopback is refused, and the attempt audited.
 */
export interface DoorControl {
  open(runId: string): Promise<string>;
  close(runId: string): Promise<void>;
}

export interface HostRouteDeps {
  audit: AuditLog;
  /** Where the door control key lives (control-key.ts): /doors answers only a request carrying it. */
  identityDir: string;
  configRoot: string;
  /** Undefined for a gateway with no door: it serves no box. */
  doors?: DoorControl | undefined;
  /** The door's numbers, when `[telemetry] metrics_listen` asks for them (door-metrics.ts). */
  metrics?: { text(): Promise<string>; contentType: string } | undefined;
  /** Which config judges, and which was refused: said at /healthz. */
  config?: { status(): ConfigStatus };
}

const DOORS = /^\/doors\/([^/?]*)$/;

/** True when the request was one of the host's routes (and has been answered). */
export function answerHostRoute(
  deps: HostRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
  identify: () => Identity | undefined,
): boolean {
  const url = req.url ?? "";
  const doors = DOORS.exec(url);
  const metrics = url === "/metrics";
  if (url !== "/healthz" && !doors && !metrics) return false;
  const local = isLoopback(req.socket.remoteAddress);
  // on loopback, a door is still opened or closed only by the deployment's own runner
  const keyless =
    local && !!doors && !carriesKey(req.headers[CONTROL_HEADER], controlKey(deps.identityDir));
  if (!local || keyless) {
    const identity = identify();
    const path = doors ? "/doors" : metrics ? "/metrics" : "/healthz";
    deps.audit
      .line(
        requestFacts({
          target: {
            protocol: "http",
            host: req.socket.localAddress ?? "gateway",
            port: req.socket.localPort ?? 0,
          },
          method: req.method ?? "GET",
          rawPath: path,
          headers: {},
          identity,
          bodySize: 0,
        }),
      )
      .write({
        verdict: "deny",
        rule: "closed",
        status: 403,
        note: doors
          ? `gateway door control${keyless ? " without its key" : ""}`
          : metrics
            ? "gateway metrics"
            : "gateway health check",
      });
    sendRefusal(
      res,
      denied(
        "closed",
        doors
          ? "the gateway's doors are opened by the deployment's own runner only (on loopback, with the key in state/identity)"
          : `the gateway's ${metrics ? "metrics answer" : "health check answers"} the host only (on loopback)`,
      ),
    );
    return true;
  }
  if (metrics) {
    req.resume();
    const source = deps.metrics;
    if (!source) sendJson(res, 404, { error: "metrics are off: [telemetry] metrics_listen" });
    else
      void source.text().then(
        (text) => res.writeHead(200, { "content-type": source.contentType }).end(text),
        () => sendJson(res, 500, { error: "the metrics could not be gathered" }),
      );
    return true;
  }
  if (!doors) {
    sendJson(res, 200, {
      ok: true,
      config_root: deps.configRoot,
      ...(deps.config ? { config: deps.config.status() } : {}),
    });
    return true;
  }
  void doorRoute(deps.doors, req.method ?? "GET", safeDecode(doors[1] ?? "")).then(
    ({ status, body }) => sendJson(res, status, body),
  );
  // a request body, if any, is not ours to read
  req.resume();
  return true;
}

async function doorRoute(
  doors: DoorControl | undefined,
  method: string,
  runId: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  if (!doors) return { status: 409, body: { error: "this gateway has no door: it serves no box" } };
  try {
    if (method === "POST") return { status: 200, body: { door: await doors.open(runId) } };
    if (method === "DELETE") {
      await doors.close(runId);
      return { status: 200, body: { closed: runId } };
    }
    return { status: 405, body: { error: `${method} /doors/<run>: use POST or DELETE` } };
  } catch (error) {
    const status = error instanceof DoorError ? error.status : 500;
    return { status, body: { error: error instanceof Error ? error.message : String(error) } };
  }
}

/** A run id as sent; malformed escapes stay as written (and then fail the run id check). */
function safeDecode(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function sendJson(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** A peer on this machine's loopback (IPv4, IPv6, or IPv4 mapped into IPv6). */
function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith("::ffff:") ? address.slice(7) : address;
  return plain === "::1" || /^127\./.test(plain);
}
