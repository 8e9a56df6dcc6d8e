import { webcrypto } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { createSecureContext, rootCertificates, type SecureContext } from "node:tls";
import type * as X509 from "@peculiar/x509";
import { hostName } from "../../../ground/config/host-name.ts";
import { replaceFile } from "../../../ground/files/atomic-replace.ts";

/**
 * The host CA that lets the gateway read a box's TLS: created once under
 * data/ca/ (the key 0600, never mounted into a box), it signs a leaf for each
 * host name a box connects to. `bundle.crt` (system roots + this CA) is what
 * boxes trust; the runner mounts it read-only.
 */
/**
 * @peculiar/x509 (with the reflect polyfill it needs) takes a quarter of a
 * second to load: more than the rest of a gateway's start. It is loaded by
 * warm() once the gateway listens and has said so, so nothing waits for it and
 * the first leaf (a second later, once a box is up) finds it ready.
 */
let x509Module: Promise<typeof X509> | undefined;
function loadX509(): Promise<typeof X509> {
  x509Module ??= (async () => {
    await import("reflect-metadata");
    const x509 = await import("@peculiar/x509");
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    return x509;
  })();
  return x509Module;
}

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY = 86_400_000;
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

export interface CaFiles {
  dir: string;
  key: string;
  cert: string;
  bundle: string;
}

export function caFiles(dir: string): CaFiles {
  return {
    dir,
    key: join(dir, "ca.key"),
    cert: join(dir, "ca.crt"),
    bundle: join(dir, "bundle.crt"),
  };
}

function toPem(der: ArrayBuffer, label: string): string {
  const base64 = Buffer.from(der)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n");
  return `-----BEGIN ${label}-----\n${base64.trimEnd()}\n-----END ${label}-----\n`;
}

function fromPem(pem: string): ArrayBuffer {
  const base64 = pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  const bytes = Buffer.from(base64, "base64");
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

function randomSerial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive
  return Buffer.from(bytes).toString("hex");
}

export class CertificateAuthority {
  private readonly leaves = new Map<string, Promise<SecureContext>>();

  private parsed: Promise<X509.X509Certificate> | undefined;

  private constructor(
    readonly files: CaFiles,
    readonly certPem: string,
    private readonly key: webcrypto.CryptoKey,
  ) {}

  private cert(): Promise<X509.X509Certificate> {
    this.parsed ??= loadX509().then((x509) => new x509.X509Certificate(this.certPem));
    return this.parsed;
  }

  /** Loads the CA from `dir`, creating it (and the bundle) on first use. */
  static async open(dir: string): Promise<CertificateAuthority> {
    const files = caFiles(dir);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (!existsSync(files.key) || !existsSync(files.cert)) await createCa(files);
    const certPem = await readFile(files.cert, "utf8");
    const key = await webcrypto.subtle.importKey(
      "pkcs8",
      fromPem(await readFile(files.key, "utf8")),
      ALGORITHM,
      false,
      ["sign"],
    );
    await writeBundle(files);
    return new CertificateAuthority(files, certPem, key);
  }

  /** Loads what minting a leaf needs, ahead of the first one; never throws. */
  warm(): void {
    // a failure here surfaces at the first leaf, which asks again
    this.cert().catch(() => {
      this.parsed = undefined;
    });
  }

  /** A TLS context presenting a leaf for `host` (a DNS name or an IP), minted once per process. */
  leafContext(host: string): Promise<SecureContext> {
    const name = hostName(host);
    let context = this.leaves.get(name);
    if (!context) {
      context = this.mintLeaf(name);
      this.leaves.set(name, context);
      context.catch(() => this.leaves.delete(name));
    }
    return context;
  }

  private async mintLeaf(host: string): Promise<SecureContext> {
    const x509 = await loadX509();
    const caCert = await this.cert();
    const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
    const now = Date.now();
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: `CN=${host.replace(/[,=+<>#;"\\]/g, "_")}`,
      issuer: caCert.subject,
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 90 * DAY),
      signingKey: this.key,
      publicKey: keys.publicKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          isIP(host) ? { type: "ip", value: host } : { type: "dns", value: host },
        ]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ],
    });
    const keyPem = toPem(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
    return createSecureContext({ key: keyPem, cert: leaf.toString("pem") });
  }
}

async function createCa(files: CaFiles): Promise<void> {
  const x509 = await loadX509();
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: "CN=Roster Box CA, O=roster",
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 10 * 365 * DAY),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const keyPem = toPem(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  // write the key first, 0600, then the cert: a cert without its key is never left behind
  await replaceFile(files.key, keyPem, { mode: 0o600 });
  await replaceFile(files.cert, cert.toString("pem"), { mode: 0o644 });
}

/** System roots + this CA; rebuilt when missing or older than either input. */
async function writeBundle(files: CaFiles): Promise<void> {
  const system = existsSync(SYSTEM_BUNDLE) ? SYSTEM_BUNDLE : undefined;
  const inputs = [files.cert, ...(system ? [system] : [])];
  const newest = Math.max(...inputs.map((path) => statSync(path).mtimeMs));
  if (existsSync(files.bundle) && statSync(files.bundle).mtimeMs >= newest) return;
  const roots = system ? readFileSync(system, "utf8") : `${rootCertificates.join("\n")}\n`;
  const ca = readFileSync(files.cert, "utf8");
  await replaceFile(files.bundle, `${roots.trimEnd()}\n# Roster Box CA\n${ca}`, { mode: 0o644 });
}
