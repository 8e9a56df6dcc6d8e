import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  loadTrustStore,
  readUpstreamCa,
  systemStoreFiles,
} from "../../runner/boundary/gateway/trust/trust-store.ts";
import { makeServerCertificate } from "../support/test-ca.ts";

/** Which stores the gateway reads for upstream TLS, and what it makes of them. */
let dir: string;
let bundle: string;
let named: string;
let caPem: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "roster-trust-"));
  caPem = (await makeServerCertificate(["proxy.test"])).caPem;
  bundle = join(dir, "os-bundle.crt");
  named = join(dir, "named.pem");
  // an OS bundle repeats Node's roots; the proxy CA is the one certificate Node lacks
  await writeFile(bundle, `${rootCertificates.slice(0, 3).join("\n")}\n${caPem}`);
  await writeFile(named, caPem);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the host's trust store", () => {
  it("is the file the environment names, else the first OS bundle that exists", () => {
    const bundles = [join(dir, "absent.crt"), bundle];
    expect(systemStoreFiles({}, bundles)).toEqual([{ path: bundle, missing: false }]);
    expect(systemStoreFiles({ SSL_CERT_FILE: named }, bundles)).toEqual([
      { path: named, missing: false },
    ]);
    expect(systemStoreFiles({ NODE_EXTRA_CA_CERTS: named }, bundles)).toEqual([
      { path: named, missing: false },
    ]);
    // a variable naming nothing does not leave the host without its own store
    const gone = join(dir, "gone.pem");
    expect(systemStoreFiles({ SSL_CERT_FILE: gone }, bundles)).toEqual([
      { path: gone, missing: true },
      { path: bundle, missing: false },
    ]);
    expect(systemStoreFiles({}, [join(dir, "absent.crt")])).toEqual([]);
  });

  it("adds each certificate once and counts what each store holds", () => {
    const store = loadTrustStore({}, readUpstreamCa([named]), [bundle]);
    expect(store.sources).toEqual([
      { kind: "node", certificates: rootCertificates.length },
      { kind: "system", path: bundle, certificates: 4 },
      { kind: "upstream_ca", path: named, certificates: 1 },
    ]);
    expect(store.pems).toHaveLength(rootCertificates.length + 1);
  });

  it("fails on an upstream_ca it can't read, naming the file", () => {
    const gone = join(dir, "gone.pem");
    expect(() => readUpstreamCa([gone])).toThrow(
      `[gateway] upstream_ca: can't read ${gone} (ENOENT)`,
    );
  });
});
