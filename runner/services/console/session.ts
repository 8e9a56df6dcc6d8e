import type { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { ConsoleEnv } from "./env.ts";
import { plain, shell } from "./html.ts";
import { type ConsoleKey, matches } from "./key.ts";
import { type ConsolePlace, cookieName } from "./origin.ts";

/**
 * The login link and the session check before any page (origin.ts says why
 * a session is two halves). The link's key opens a session: its cookie, and
 * its token handed to the page in the redirect's fragment. Then every
 * request needs the cookie, and every one that reads or changes anything
 * also the token of that cookie's session: the `x-console-session` header
 * (the page's script sends it), the form's `csrf` field (a form post), or
 * for the event stream, which can't send a header, its `session` query. A
 * navigation with the cookie alone gets the shell, which holds no data.
 * A post from another site's page is refused by its Origin as well.
 */
export const SESSION_HEADER = "x-console-session";

export function sessionGuard(
  app: Hono<ConsoleEnv>,
  key: ConsoleKey,
  place: () => ConsolePlace,
): void {
  // the login link: the key once, then a session; the key leaves the address bar
  app.get("/login", (c) => {
    if (!matches(c.req.query("key"), key.key))
      return c.html(
        plain(
          "Not logged in",
          "That login link is not this server's. Use the one `roster server start` printed.",
        ),
        403,
      );
    const { port } = place();
    const session = key.open(port);
    setCookie(c, cookieName(port), session.cookie, {
      httpOnly: true,
      sameSite: "Strict",
      path: "/",
    });
    // the fragment stays in the browser: the page's script keeps the token in its origin's storage
    return c.redirect(`/#session=${session.token}`, 303);
  });

  app.use(async (c, next) => {
    const { port } = place();
    const id = key.sessionOf(getCookie(c, cookieName(port)), port);
    if (!id)
      return c.html(
        plain(
          "Log in first",
          "Open the login link `roster server start` printed (it carries this install's key).",
        ),
        401,
      );
    const reading = c.req.method === "GET" || c.req.method === "HEAD";
    let presented = c.req.header(SESSION_HEADER);
    let form: Record<string, unknown> = {};
    if (reading) {
      if (presented === undefined && c.req.path === "/events") presented = c.req.query("session");
      if (presented === undefined) return c.html(shell());
    } else {
      const origin = c.req.header("origin");
      if (origin && origin !== new URL(c.req.url).origin)
        return c.html(plain("Refused", "This request came from another site."), 403);
      form = c.req.header("content-type")?.includes("form") ? await c.req.parseBody() : {};
      presented ??= typeof form.csrf === "string" ? form.csrf : undefined;
    }
    const token = key.token(id, port);
    if (!matches(presented, token))
      return c.html(
        plain(
          "Refused",
          "The request does not carry this session's token (a CSRF token); reload the page, or open the login link again.",
        ),
        403,
      );
    c.set("token", token);
    c.set("form", form);
    await next();
  });
}
