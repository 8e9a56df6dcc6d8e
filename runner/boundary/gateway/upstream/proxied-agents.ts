import {
  type ClientRequestArgs,
  Agent as HttpAgent,
  type AgentOptions as HttpAgentOptions,
} from "node:http";
import {
  Agent as HttpsAgent,
  type AgentOptions as HttpsAgentOptions,
  type RequestOptions,
} from "node:https";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import type { Lookup, ParentProxy } from "./parent-proxy.ts";

/**
 * Node's own agents (keep-alive pools, as pools.ts explains), whose sockets are
 * tunnels through the parent proxy: the request's own guarded `lookup` judges
 * the destination inside ParentProxy.open, and TLS to the upstream runs
 * inside the tunnel, end to end, with the door's trust store.
 */
type Made = (error: Error | null, stream: Duplex) => void;

function tunnelFor(proxy: ParentProxy, options: ClientRequestArgs): Promise<Socket> {
  const host = options.host ?? options.hostname ?? "";
  const port = Number(options.port);
  if (typeof options.lookup !== "function")
    return Promise.reject(new Error("a proxied connection needs the door's guarded lookup"));
  return proxy.open(host, port, options.lookup as Lookup);
}

/** Hands the agent a failure: Node's agents take (error) with no stream. */
function failed(callback: Made | undefined, error: unknown): void {
  callback?.(
    error instanceof Error ? error : new Error(String(error)),
    undefined as unknown as Duplex,
  );
}

export class ProxiedHttpAgent extends HttpAgent {
  constructor(
    options: HttpAgentOptions,
    private readonly proxy: ParentProxy,
  ) {
    super(options);
  }

  override createConnection(options: ClientRequestArgs, callback?: Made): undefined {
    tunnelFor(this.proxy, options).then(
      (socket) => {
        callback?.(null, socket);
        // the request listens now (a server speaks only when asked, so nothing came before)
        socket.resume();
      },
      (error: unknown) => failed(callback, error),
    );
    return undefined;
  }
}

export class ProxiedHttpsAgent extends HttpsAgent {
  constructor(
    options: HttpsAgentOptions,
    private readonly proxy: ParentProxy,
  ) {
    super(options);
  }

  override createConnection(options: RequestOptions, callback?: Made): undefined {
    tunnelFor(this.proxy, options).then(
      (socket) => {
        const host = options.host ?? options.hostname ?? "";
        const servername = options.servername ?? (isIP(host) ? undefined : host);
        const secure = tlsConnect({
          socket,
          ...(servername ? { servername } : {}),
          ...(this.options.secureContext ? { secureContext: this.options.secureContext } : {}),
          ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        });
        socket.resume();
        callback?.(null, secure);
      },
      (error: unknown) => failed(callback, error),
    );
    return undefined;
  }
}
