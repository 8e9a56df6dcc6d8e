import { loadTrustStore } from "./trust-store.ts";

/**
 * The certificates an executor's own TLS connection (SMTP, a chat platform)
 * trusts: the store the gateway verifies its upstreams against (trust-store.ts)
 * — Node's bundled roots plus the host's system store (SSL_CERT_FILE or
 * NODE_EXTRA_CA_CERTS when set, else the OS bundle). A host whose outbound TLS
 * passes an intercepting proxy then reaches a chat platform from the desk as
 * it does through the door. Given explicitly because the `roster` command starts with
 * NODE_EXTRA_CA_CERTS's loading deferred (bin/roster.mjs: parsing the whole
 * store cost every command ~60 ms), and Node's default never reads the OS
 * bundle. Read once per environment.
 */
let cached: { key: string; ca: string[] } | undefined;

export function hostCa(env: NodeJS.ProcessEnv = process.env): string[] {
  const key = `${env.SSL_CERT_FILE ?? ""}\0${env.NODE_EXTRA_CA_CERTS ?? ""}`;
  if (cached?.key !== key) cached = { key, ca: loadTrustStore(env, []).pems };
  return cached.ca;
}

/**
 * A fetch whose TLS trusts exactly `ca`, for the chat platforms' clients
 * (each platform's client.ts under services/chat/ takes one). undici loads on the first request.
 * One connection pool per trust list for the whole process: the executors
 * make a client per send, and a pool each would leave its idle sockets behind.
 */
type Client = { send: typeof import("undici").fetch; via: import("undici").Agent };
const clients = new WeakMap<string[], Promise<Client>>();

export function trustingFetch(ca: string[]): typeof fetch {
  const send = async (input: string | URL | Request, init?: RequestInit) => {
    let client = clients.get(ca);
    if (!client) {
      client = import("undici").then(({ Agent, fetch }) => ({
        send: fetch,
        via: new Agent({ connect: { ca } }),
      }));
      clients.set(ca, client);
    }
    const { send, via } = await client;
    const url = input instanceof Request ? input.url : input;
    return send(url, { ...(init as import("undici").RequestInit), dispatcher: via });
  };
  return send as unknown as typeof fetch;
}
