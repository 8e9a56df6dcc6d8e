/**
 * TEST DOUBLE for an OpenTelemetry collector, which can't be installed here:
 * an OTLP/HTTP receiver that takes `POST /v1/traces` as the real protocol
 * sends it in JSON (the OTLP/JSON encoding: ids in hex, times in nanoseconds
 * as strings, attributes as typed values), decodes every span, and answers
 * as a collector does (200 with an empty partial-success object). A body in
 * protobuf is refused 415, so a test can't pass on what it can't read.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  statusCode: number;
}

interface JsonValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface JsonSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: Array<{ key: string; value: JsonValue }>;
  status?: { code?: number };
}
interface JsonExport {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: JsonValue }> };
    scopeSpans?: Array<{ spans?: JsonSpan[] }>;
  }>;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests received, of any kind. */
  requests = 0;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let self: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        if (!self) return;
        self.requests++;
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        if (!(req.headers["content-type"] ?? "").startsWith("application/json")) {
          res.writeHead(415).end();
          return;
        }
        self.take(JSON.parse(Buffer.concat(chunks).toString("utf8")) as JsonExport);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    self = new OtlpReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return self;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private take(body: JsonExport): void {
    for (const resource of body.resourceSpans ?? []) {
      const service = String(attributesOf(resource.resource?.attributes)["service.name"] ?? "");
      for (const scope of resource.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          this.spans.push({
            service,
            traceId: span.traceId ?? "",
            spanId: span.spanId ?? "",
            parentSpanId: span.parentSpanId ?? "",
            name: span.name ?? "",
            startNs: BigInt(span.startTimeUnixNano ?? 0),
            endNs: BigInt(span.endTimeUnixNano ?? 0),
            attributes: attributesOf(span.attributes),
            statusCode: span.status?.code ?? 0,
          });
    }
  }
}

function attributesOf(
  list: Array<{ key: string; value: JsonValue }> | undefined,
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}
