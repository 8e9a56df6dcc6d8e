import { domainToASCII } from "node:url";

/**
 * The one form a host name is compared in, wherever it is compared (grants,
 * the judge, the SSRF guard, closed ports, credentials, static answers, leaf
 * certificates): trimmed, lower-cased, without IPv6 brackets or a trailing
 * dot, and an internationalised name in its ASCII (punycode) form, so that
 * `Example.COM.`, `example.com` and `[::1]`/`::1` are each one host, and so
 * is `bücher.example` with `xn--bcher-kva.example`. Imports nothing of ours.
 */
export function hostName(raw: string): string {
  let out = raw.trim().toLowerCase();
  if (out.startsWith("[") && out.endsWith("]")) out = out.slice(1, -1);
  if (out.endsWith(".")) out = out.slice(0, -1);
  // only a name with non-ASCII letters needs IDNA; one it can't map stays as written
  // (and then matches nothing a grant could name)
  if (/[\u0080-\uffff]/.test(out)) out = domainToASCII(out) || out;
  return out;
}
