/**
 * A stand-in HTTPS API that takes a bearer token, for the connection tests: it
 * answers 200 to the right token and 401 to any other (as a real API does),
 * and never echoes a header back, so a box can't learn the token from it. It
 * listens on port 443 of a loopback address of the test's choosing (service
 * connections are HTTPS on 443; the org's `resolve` points a name at it), so
 * it needs root. Its CA is written where `upstream_ca` can name it.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Upstream } from "./upstream.ts";

export interface BearerApi {
  upstream: Upstream;
  caFile: string;
  /** The org.toml [gateway] lines that reach it as `name`. */
  gatewayToml: string;
}

export async function startBearerApi(options: {
  name: string;
  address: string;
  token: string;
  dir: string;
}): Promise<BearerApi> {
  const upstream = await Upstream.start({
    tls: true,
    names: [options.name],
    host: options.address,
    port: 443,
    handler: (req, res) => {
      const ok = req.headers.authorization === `Bearer ${options.token}`;
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(JSON.stringify(ok ? { ok: true, path: req.url } : { error: "bad token" }));
    },
  });
  const caFile = join(options.dir, `${options.name}-ca.pem`);
  await writeFile(caFile, upstream.certificate?.caPem ?? "");
  return {
    upstream,
    caFile,
    gatewayToml: `upstream_ca = [${JSON.stringify(caFile)}]\nresolve = { ${JSON.stringify(options.name)} = ${JSON.stringify(options.address)} }`,
  };
}
