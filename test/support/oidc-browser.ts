/**
 * A test double for the person at the browser in an OAuth sign-in. The real
 * provider (oidc-provider, see oidc-provider.ts) asks a person to sign in and
 * to consent on its own pages; this scripted browser reads those pages — the
 * library's development login and consent forms, and its device-flow user-code
 * forms — and submits them the way the person would: over HTTPS, trusting the
 * provider's test CA, with the provider's names resolved to its address, and
 * keeping the provider's cookies (session, interaction, resume and their .sig
 * signatures) across requests. It stops at the redirect back to the client,
 * which it hands to the test instead of following.
 */
import { lookup as dnsLookup } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { CLIENT } from "./oidc-provider.ts";

type Choice = "allow" | "deny";

const HTML = "text/html,application/xhtml+xml";
const JSON_ONLY = "application/json";

interface Page {
  url: URL;
  status: number;
  location: string | undefined;
  body: string;
}

interface Form {
  id: string | undefined;
  action: string;
  fields: Record<string, string>;
}

type Cookie = { host: string; path: string; name: string; value: string };

/** Cookies by host, path and name: enough for one provider's host-only cookies. */
class CookieJar {
  private readonly cookies = new Map<string, Cookie>();

  store(url: URL, header: string | string[] | undefined): void {
    for (const line of typeof header === "string" ? [header] : (header ?? [])) {
      const [pair = "", ...attributes] = line.split(";");
      const equals = pair.indexOf("=");
      if (equals < 1) continue;
      const cookie: Cookie = {
        host: url.hostname,
        path: url.pathname.replace(/\/[^/]*$/, "") || "/",
        name: pair.slice(0, equals).trim(),
        value: pair.slice(equals + 1).trim(),
      };
      let expired = false;
      for (const attribute of attributes) {
        const [name = "", value = ""] = attribute.split("=").map((part) => part.trim());
        const key = name.toLowerCase();
        if (key === "path" && value.startsWith("/")) cookie.path = value;
        if (key === "max-age" && Number(value) <= 0) expired = true;
        if (key === "expires" && Date.parse(value) <= Date.now()) expired = true;
      }
      const key = `${cookie.host} ${cookie.path} ${cookie.name}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, cookie);
    }
  }

  header(url: URL): string | undefined {
    const path = url.pathname;
    const matching = [...this.cookies.values()]
      .filter(
        (cookie) =>
          cookie.host === url.hostname &&
          (path === cookie.path ||
            path.startsWith(cookie.path.endsWith("/") ? cookie.path : `${cookie.path}/`)),
      )
      .sort((a, b) => b.path.length - a.path.length);
    return matching.length
      ? matching.map((cookie) => `${cookie.name}=${cookie.value}`).join("; ")
      : undefined;
  }
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"' };

/** Undoes the escaping the library applies to attribute values. */
function decode(text: string): string {
  return text.replace(/&(#\d+|amp|lt|gt|quot);/g, (_, entity: string) =>
    entity.startsWith("#")
      ? String.fromCharCode(Number(entity.slice(1)))
      : (ENTITIES[entity] ?? ""),
  );
}

function attributes(tag: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [, name = "", value = ""] of tag.matchAll(/([\w.:-]+)="([^"]*)"/g)) {
    found[name.toLowerCase()] = decode(value);
  }
  return found;
}

/** The page's forms with their hidden (and pre-filled) inputs. */
function forms(html: string): Form[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map(
    ([, tag = "", inner = ""]) => {
      const form = attributes(tag);
      const fields: Record<string, string> = {};
      for (const [, input = ""] of inner.matchAll(/<input\b([^>]*)>/g)) {
        const { name, value } = attributes(input);
        if (name !== undefined && value !== undefined) fields[name] = value;
      }
      return { id: form.id, action: form.action ?? "", fields };
    },
  );
}

function parseJson(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function describe(page: Page): string {
  const where = page.location ? ` -> ${page.location}` : "";
  return `${page.status} at ${page.url.pathname}${where}: ${page.body.slice(0, 200)}`;
}

export class OidcBrowser {
  private readonly agent: Agent;
  private readonly jar = new CookieJar();
  /** The provider's origin, from the last authorization URL. */
  private origin: string | undefined;

  constructor(options: { ca: string; resolve: Record<string, string> }) {
    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      const address = options.resolve[hostname];
      if (address === undefined) {
        dnsLookup(hostname, lookupOptions, callback);
      } else if (lookupOptions.all) {
        callback(null, [{ address, family: isIP(address) }]);
      } else {
        callback(null, address, isIP(address));
      }
    };
    this.agent = new Agent({ connect: { ca: options.ca, lookup } });
  }

  /**
   * Signs in and consents (or declines) at an authorization URL; returns the
   * redirect back to the client (`http://127.0.0.1:<port>/callback?...`), unrequested.
   */
  async authorize(url: string, choice: Choice): Promise<URL> {
    const start = new URL(url);
    this.origin = start.origin;
    const end = await this.walk(await this.get(start), choice, start.origin);
    if (end instanceof URL) return end;
    throw new Error(`authorize: expected a redirect back to the client, got ${describe(end)}`);
  }

  /** The redirect's delivery to the client's loopback listener (plain http, not followed). */
  async deliver(url: URL): Promise<{ status: number; body: string }> {
    const response = await request(url, { method: "GET", dispatcher: this.agent });
    return { status: response.statusCode, body: await response.body.text() };
  }

  /**
   * Spends an authorization code at the provider's token endpoint (found by
   * discovery) as the client, with no code_verifier unless one is given: what
   * whoever caught the redirect could try. The provider answers in JSON.
   */
  async exchange(
    code: string,
    redirectUri: string,
    verifier?: string,
  ): Promise<{ status: number; error: string | undefined; body: string }> {
    if (this.origin === undefined) throw new Error("exchange: no authorization URL opened yet");
    const where = new URL("/.well-known/openid-configuration", this.origin);
    const discovery = await this.send(where, "GET", undefined, JSON_ONLY);
    const endpoint = parseJson(discovery.body).token_endpoint;
    if (discovery.status !== 200 || typeof endpoint !== "string") {
      throw new Error(`exchange: expected the discovery document, got ${describe(discovery)}`);
    }
    const fields = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      client_id: CLIENT.id,
      client_secret: CLIENT.secret,
    });
    if (verifier !== undefined) fields.set("code_verifier", verifier);
    const answer = await this.send(new URL(endpoint), "POST", fields.toString(), JSON_ONLY);
    const error = parseJson(answer.body).error;
    const status = answer.status;
    return { status, error: typeof error === "string" ? error : undefined, body: answer.body };
  }

  /** The device flow's user side: enter the code, confirm, sign in, consent (or abort). */
  async deviceConsent(verificationUri: string, userCode: string, choice: Choice): Promise<void> {
    const start = new URL(verificationUri);
    const input = await this.get(start);
    const inputForm = this.form(input, "op.deviceInputForm", "device code page");
    const confirm = await this.post(new URL(inputForm.action, input.url), {
      ...inputForm.fields,
      user_code: userCode,
    });
    const confirmForm = this.form(confirm, "op.deviceConfirmForm", "device confirm page");
    const end = await this.walk(
      await this.post(new URL(confirmForm.action, confirm.url), confirmForm.fields),
      choice,
      start.origin,
    );
    if (end instanceof URL) {
      throw new Error(`device ${choice}: unexpected redirect off the provider to ${end.href}`);
    }
    const expected = choice === "allow" ? "Sign-in Success" : "The Sign-in request was interrupted";
    if (end.status !== 200 || !end.body.includes(expected)) {
      throw new Error(`device ${choice}: expected the "${expected}" page, got ${describe(end)}`);
    }
  }

  /**
   * Follows the provider's redirects and answers its login and consent pages;
   * returns the first redirect off `origin`, or the first page that is neither.
   */
  private async walk(first: Page, choice: Choice, origin: string): Promise<URL | Page> {
    let page = first;
    for (let hop = 0; hop < 20; hop += 1) {
      if (page.status >= 300 && page.status < 400) {
        if (page.location === undefined)
          throw new Error(`redirect: no location in ${describe(page)}`);
        const next = new URL(page.location, page.url);
        if (next.origin !== origin) return next;
        page = await this.get(next);
        continue;
      }
      const prompt = page.status === 200 ? this.prompt(page) : undefined;
      if (prompt === undefined) return page;
      if (prompt.fields.prompt === "login") {
        page = await this.post(new URL(prompt.action, page.url), {
          prompt: "login",
          login: "operator",
          password: "any",
        });
      } else if (choice === "allow") {
        page = await this.post(new URL(prompt.action, page.url), { prompt: "consent" });
      } else {
        const abort = /<a href="([^"]*\/abort)"/.exec(page.body)?.[1];
        if (abort === undefined) throw new Error(`consent: no abort link on ${describe(page)}`);
        page = await this.get(new URL(decode(abort), page.url));
      }
    }
    throw new Error(`walk: more than 20 steps, last ${describe(page)}`);
  }

  /** The dev interaction's form (prompt=login or prompt=consent), if this is one. */
  private prompt(page: Page): Form | undefined {
    return forms(page.body).find(
      (form) => form.fields.prompt === "login" || form.fields.prompt === "consent",
    );
  }

  private form(page: Page, id: string, step: string): Form {
    const form = page.status === 200 ? forms(page.body).find((each) => each.id === id) : undefined;
    if (form === undefined || form.fields.xsrf === undefined) {
      throw new Error(
        `${step}: expected the form ${id} with its xsrf field, got ${describe(page)}`,
      );
    }
    return form;
  }

  private get(url: URL): Promise<Page> {
    return this.send(url, "GET");
  }

  private post(url: URL, fields: Record<string, string>): Promise<Page> {
    return this.send(url, "POST", new URLSearchParams(fields).toString());
  }

  private async send(
    url: URL,
    method: "GET" | "POST",
    body?: string,
    accept = HTML,
  ): Promise<Page> {
    const headers: Record<string, string> = { accept, "user-agent": "roster-test-browser" };
    const cookie = this.jar.header(url);
    if (cookie) headers.cookie = cookie;
    if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await request(url, {
      method,
      headers,
      dispatcher: this.agent,
      ...(body === undefined ? {} : { body }),
    });
    this.jar.store(url, response.headers["set-cookie"]);
    const location = response.headers.location;
    return {
      url,
      status: response.statusCode,
      location: typeof location === "string" ? location : location?.[0],
      body: await response.body.text(),
    };
  }

  /** Closes the browser's connections. */
  async close(): Promise<void> {
    await this.agent.close();
  }
}
