import { describe, expect, it } from "vitest";
import { carriesSentinel } from "../../runner/boundary/gateway/judging/sentinel.ts";
import { SENTINEL } from "../../runner/ground/config/sentinel.ts";
import { facts } from "../support/facts.ts";

/**
 * Where the door finds a box's credential sentinel: as written and
 * percent-decoded in the path and query, in any header, in a held body, and
 * base64'd after any prefix (Basic auth's `user:` is whatever length the
 * client chose), in both base64 alphabets; and not in a request without it.
 */
const none = Buffer.alloc(0);
const b64 = (text: string) => Buffer.from(text).toString("base64");
const b64url = (text: string) => Buffer.from(text).toString("base64url");

describe("the sentinel's forms", () => {
  it("finds it base64'd after a prefix of any length, in either alphabet", () => {
    for (const user of ["", "a:", "ab:", "abc:", "x-access-token:", "üñí:"]) {
      const value = `${user}${SENTINEL}`;
      for (const encoded of [b64(value), b64url(value)]) {
        const request = facts({ headers: { authorization: `Basic ${encoded}` } });
        expect(carriesSentinel(request, none), `${user} ${encoded}`).toBe(true);
        expect(carriesSentinel(facts(), Buffer.from(`{"k":"${encoded}"}`)), user).toBe(true);
      }
    }
  });

  it("finds it in the path, the query (escaped or not) and a body", () => {
    const escaped = [...SENTINEL].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("");
    expect(carriesSentinel(facts({ path: `/a/${SENTINEL}/b` }), none)).toBe(true);
    expect(carriesSentinel(facts({ path: `/a/${escaped}` }), none)).toBe(true);
    expect(carriesSentinel(facts({ query: `t=${escaped}&x=1` }), none)).toBe(true);
    expect(carriesSentinel(facts({ headers: { cookie: `s=${SENTINEL}` } }), none)).toBe(true);
    expect(carriesSentinel(facts(), Buffer.from(`token=${SENTINEL}`))).toBe(true);
  });

  it("finds nothing in a request without it, or with only part of it", () => {
    const part = SENTINEL.slice(0, -3);
    const request = facts({
      path: `/${part}`,
      query: `q=${part}`,
      headers: { authorization: `Basic ${b64(`u:${part}`)}`, "x-a": "roster-sentinel" },
    });
    expect(carriesSentinel(request, Buffer.from(part))).toBe(false);
  });
});
