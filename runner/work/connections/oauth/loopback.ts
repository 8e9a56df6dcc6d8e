import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { RosterError } from "../../../ground/errors.ts";

/**
 * The loopback redirect of a native app's sign-in (RFC 8252 §7.3): an HTTP
 * listener on 127.0.0.1 only, at a port the system picks unless the person
 * names one, waiting for the one answer the provider sends the browser back
 * with. Only an answer carrying this sign-in's `state` counts: any other
 * (a forged or stale redirect, which anyone on this host can send to a
 * loopback port) is answered with an error page and ignored, and the wait
 * goes on until the right one or the deadline, so a stray request can't end
 * a sign-in the person is still consenting to. The right one decides: a code
 * when its `iss`, where the issuer is known, names it (RFC 9207, against a
 * mix-up), else a refusal. The browser is told in one sentence either way;
 * the listener closes once an answer has decided.
 */
export interface Loopback {
  redirectUri: string;
  /** The authorization code, or a RosterError saying why there is none. */
  code: Promise<string>;
  /**
   * The redirect's query as pasted by the person (a browser on another
   * machine ends at an address it can't open): judged exactly as one that
   * reached the listener. Undefined when it decided; else why it was not taken
   * (no answer at all, or another sign-in's), and the wait goes on.
   */
  pasted(query: URLSearchParams): string | undefined;
  close(): void;
}

export interface LoopbackOptions {
  state: string;
  issuer?: string;
  port?: number;
  waitMs: number;
  /** Told of each answer ignored for carrying another state. */
  ignored?: (why: string) => void;
}

const PATH = "/callback";

export async function openLoopback(options: LoopbackOptions): Promise<Loopback> {
  let settle: { resolve(code: string): void; reject(error: Error): void } | undefined;
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (request.method !== "GET" || url.pathname !== PATH) {
      // a browser asks for /favicon.ico too: answered, and the wait goes on
      response.writeHead(404, { "content-type": "text/plain" }).end("not here\n");
      return;
    }
    const outcome = readAnswer(url.searchParams, options);
    page(response, outcome.kind === "code" ? 200 : 400, outcome.page);
    if (outcome.kind === "stray") options.ignored?.(outcome.error);
    else decide(outcome);
  });
  const decide = (outcome: Exclude<Answer, { kind: "stray" }>) => {
    if (outcome.kind === "code") settle?.resolve(outcome.code);
    else settle?.reject(new RosterError(outcome.error, { exitCode: 1 }));
    close();
  };
  const timer = setTimeout(() => {
    settle?.reject(
      new RosterError(
        `no answer came back to the loopback within ${Math.round(options.waitMs / 60_000)} minutes; nothing was stored`,
        { exitCode: 1, hint: "sign in again; --device signs in from another machine's browser" },
      ),
    );
    close();
  }, options.waitMs);
  timer.unref();
  const close = () => {
    clearTimeout(timer);
    server.close();
    server.closeAllConnections();
  };
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new RosterError(
          `the loopback could not listen on 127.0.0.1:${options.port ?? 0} (${error.code ?? error.message})`,
          { exitCode: 1 },
        ),
      ),
    );
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  const pasted = (query: URLSearchParams) => {
    if (!query.has("state") && !query.has("code") && !query.has("error"))
      return "that is not the address the browser ended at (it carries no code, state or error)";
    const outcome = readAnswer(query, options);
    if (outcome.kind === "stray") return outcome.error;
    decide(outcome);
    return undefined;
  };
  return { redirectUri: `http://127.0.0.1:${port}${PATH}`, code, pasted, close };
}

/** `stray`: not this sign-in's answer at all, ignored; the others decide it. */
type Answer =
  | { kind: "code"; code: string; page: string }
  | { kind: "refused"; error: string; page: string }
  | { kind: "stray"; error: string; page: string };

function readAnswer(query: URLSearchParams, options: LoopbackOptions): Answer {
  if (query.get("state") !== options.state)
    return {
      kind: "stray",
      error:
        "an answer came back to the loopback with a state that is not this sign-in's (a forged or stale redirect): ignored; still waiting for this sign-in's",
      page: "This answer is not for the sign-in roster is waiting for, so it was refused and ignored. Nothing was stored.",
    };
  const iss = query.get("iss");
  if (options.issuer !== undefined && iss !== null && iss !== options.issuer)
    return {
      kind: "refused",
      error: `the answer names the issuer ${short(iss)}, not ${options.issuer} (a mix-up); nothing was stored`,
      page: "This answer comes from another provider than the one roster asked, so it was refused.",
    };
  const error = query.get("error");
  if (error !== null) {
    const description = query.get("error_description");
    const said = `${short(error)}${description ? ` (${short(description)})` : ""}`;
    return {
      kind: "refused",
      error:
        error === "access_denied"
          ? `consent was not given (${said}); nothing was stored`
          : `the provider refused the sign-in: ${said}; nothing was stored`,
      page: `No access was given (${said}). Nothing was stored; you may close this tab.`,
    };
  }
  const code = query.get("code");
  if (!code)
    return {
      kind: "refused",
      error: "the answer that came back to the loopback has neither a code nor an error",
      page: "This answer has no code, so nothing was stored.",
    };
  return { kind: "code", code, page: "Signed in: roster has its tokens. You may close this tab." };
}

/** What the provider or a forger put in the URL is shown cut short, never whole. */
function short(text: string): string {
  return JSON.stringify(text.slice(0, 120));
}

function page(response: ServerResponse, status: number, sentence: string): void {
  const escaped = sentence.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  response
    .writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    })
    .end(`<!doctype html><title>roster sign-in</title><p>${escaped}</p>\n`);
}
