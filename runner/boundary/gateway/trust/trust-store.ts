import { existsSync, readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";

/**
 * What the gateway trusts for upstream TLS: what the host's own tools trust.
 * Node's bundled roots, the host's system store (the file SSL_CERT_FILE or
 * NODE_EXTRA_CA_CERTS names when set, else the OS bundle, the first that
 * exists), and the operator's `[gateway] upstream_ca` files. Without the
 * system store, a host whose outbound TLS passes an intercepting proxy (its
 * CA installed with update-ca-certificates) reaches everything with curl and
 * nothing through the door. Read once, when the gateway starts.
 */
export type TrustKind = "node" | "system" | "upstream_ca";

export interface TrustSource {
  kind: TrustKind;
  /** The file read (none for Node's bundled roots). */
  path?: string;
  /** Certificates it holds; 0 when missing. */
  certificates: number;
  /** Named by the environment but not there: nothing trusted from it. */
  missing?: boolean;
}

export interface TrustStore {
  sources: TrustSource[];
  /** Every certificate (PEM), each once. */
  pems: string[];
}

/** Where distributions keep the system bundle, in the order Go's crypto/x509 looks. */
export const OS_BUNDLES = [
  "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Gentoo, Arch
  "/etc/pki/tls/certs/ca-bundle.crt", // Fedora, RHEL
  "/etc/ssl/ca-bundle.pem", // openSUSE
  "/etc/pki/tls/cacert.pem", // OpenELEC
  "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
  "/etc/ssl/cert.pem", // Alpine, macOS
];

/** The files of the host's system store: the environment's, else the first OS bundle present. */
export function systemStoreFiles(
  env: NodeJS.ProcessEnv,
  bundles: readonly string[] = OS_BUNDLES,
): { path: string; missing: boolean }[] {
  const named = [env.SSL_CERT_FILE, env.NODE_EXTRA_CA_CERTS].filter(
    (file): file is string => typeof file === "string" && file.length > 0,
  );
  const unique = [...new Set(named)].map((path) => ({ path, missing: !existsSync(path) }));
  // a variable naming a file that is not there does not leave the host's own store out
  if (unique.some((file) => !file.missing)) return unique;
  const bundle = bundles.find((path) => existsSync(path));
  return bundle ? [...unique, { path: bundle, missing: false }] : unique;
}

/** An `[gateway] upstream_ca` file as read. */
export interface UpstreamCa {
  path: string;
  text: string;
}

/**
 * Reads the operator's `upstream_ca` files. One that can't be read fails: the
 * operator named it in org.toml, and the gateway should not start without it.
 */
export function readUpstreamCa(files: readonly string[]): UpstreamCa[] {
  return files.map((path) => {
    try {
      return { path, text: readFileSync(path, "utf8") };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new Error(`[gateway] upstream_ca: can't read ${path} (${code})`);
    }
  });
}

/**
 * Every store, each certificate once. A system file that vanished is only
 * left out, as the host's tools would.
 */
export function loadTrustStore(
  env: NodeJS.ProcessEnv,
  upstreamCa: readonly UpstreamCa[],
  bundles: readonly string[] = OS_BUNDLES,
): TrustStore {
  const seen = new Set<string>();
  const pems: string[] = [];
  const sources: TrustSource[] = [];
  const add = (certificates: string[]): number => {
    for (const pem of certificates) {
      const key = pem.replace(/\s+/g, "");
      if (seen.has(key)) continue;
      seen.add(key);
      pems.push(pem);
    }
    return certificates.length;
  };
  sources.push({ kind: "node", certificates: add([...rootCertificates]) });
  for (const file of systemStoreFiles(env, bundles)) {
    let text: string | undefined;
    try {
      text = file.missing ? undefined : readFileSync(file.path, "utf8");
    } catch {
      text = undefined;
    }
    sources.push(
      text === undefined
        ? { kind: "system", path: file.path, certificates: 0, missing: true }
        : { kind: "system", path: file.path, certificates: add(pemBlocks(text)) },
    );
  }
  for (const { path, text } of upstreamCa) {
    // a file with no PEM block is passed on whole, as before (doctor shows it holds none)
    const blocks = pemBlocks(text);
    add(blocks.length > 0 ? blocks : [text]);
    sources.push({ kind: "upstream_ca", path, certificates: blocks.length });
  }
  return { sources, pems };
}

/** The certificates of a PEM bundle, each a whole BEGIN…END block (comments between them dropped). */
export function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
}

/** One line per store, for `roster box doctor`. */
export function describeTrust(sources: readonly TrustSource[]): string[] {
  return sources.map((source) => {
    const count = `${source.certificates} certificate${source.certificates === 1 ? "" : "s"}`;
    if (source.kind === "node") return `Node's bundled roots (${count})`;
    if (source.missing) return `${source.kind} ${source.path} (named but missing: not trusted)`;
    return `${source.kind} ${source.path} (${count})`;
  });
}
