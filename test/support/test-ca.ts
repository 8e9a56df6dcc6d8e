/**
 * A certificate authority for the tests' own HTTPS upstreams — separate from
 * roster's CA on purpose: the gateway must be told to trust it (by config), the
 * way an operator trusts an internal service's CA.
 */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

function pem(der: ArrayBuffer, label: string): string {
  const body = Buffer.from(der)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trimEnd();
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}

export interface TestCertificate {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A fresh CA and one server certificate for `names` (DNS names or IPs). */
export async function makeServerCertificate(names: string[]): Promise<TestCertificate> {
  const caKeys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const now = Date.now();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "0a",
    name: "CN=roster test upstream CA",
    notBefore: new Date(now - 86_400_000),
    notAfter: new Date(now + 86_400_000 * 30),
    keys: caKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "0b",
    subject: `CN=${names[0] ?? "localhost"}`,
    issuer: ca.subject,
    notBefore: new Date(now - 86_400_000),
    notAfter: new Date(now + 86_400_000 * 30),
    signingKey: caKeys.privateKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.SubjectAlternativeNameExtension(
        names.map((name) =>
          isIP(name) ? { type: "ip", value: name } : { type: "dns", value: name },
        ),
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  return {
    caPem: ca.toString("pem"),
    certPem: cert.toString("pem"),
    keyPem: pem(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
  };
}
