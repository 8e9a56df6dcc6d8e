import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";

/**
 * The certificates an executor's own TLS connection (SMTP, Slack, Discord)
 * trusts: Node's bundled roots plus the file NODE_EXTRA_CA_CERTS names (a
 * corporate proxy's CA, say) — what Node's default store holds when it loads
 * that file at start. Given explicitly because the `roster` command starts
 * with the file's loading deferred (bin/roster.mjs: parsing the whole store
 * cost every command ~60 ms), so this process's default store may lack it.
 * Undefined without the variable: Node's default applies unchanged.
 */
let cached: { file: string; ca: string[] | undefined } | undefined;

export function hostCa(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (!file) return undefined;
  if (cached?.file !== file) {
    let extra: string | undefined;
    try {
      extra = readFileSync(file, "utf8");
    } catch {
      // Node itself warns and goes on without an unreadable file
      extra = undefined;
    }
    cached = { file, ca: extra ? [...rootCertificates, extra] : undefined };
  }
  return cached.ca;
}

/**
 * A fetch whose TLS trusts exactly `ca`, for the chat clients (Slack's
 * WebClient and Discord's REST take one). undici loads on the first request.
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
