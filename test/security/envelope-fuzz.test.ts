import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listGates } from "../../runner/services/actions/gates.ts";
import { postAction, startEmailDesk, submitAction } from "../support/action-host.ts";
import type { GatewayEnv } from "../support/gateway-env.ts";
import type { SmtpSink } from "../support/smtp.ts";

/**
 * Envelope fuzzing of the action host, through the real gateway: valid
 * envelopes with one field swapped for a random value of a random kind,
 * random bodies, and payloads at the size limit's edges. Each answer is a
 * 400 naming the field, a 403, or (when the swap happened to be valid) a
 * gate filed (each 50 rounds a run of their own, within a run's share of
 * proposals); never a 5xx, never a hang, and nothing is ever executed (the
 * mail server, on the far side of a gated action, receives nothing). After
 * all of it the host still answers a good envelope.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
const ROUNDS = 250;

/** A small seeded generator, so a failing round can be replayed with FUZZ_SEED. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const valid = () => ({
  intent: "email-send",
  payload: { to: ["lead@example.test"], subject: "numbers", body: "the numbers are in" },
  rationale: "asked for",
});

describe("the action host under envelope fuzzing", () => {
  let env: GatewayEnv;
  let smtp: SmtpSink;

  beforeAll(async () => {
    ({ env, smtp } = await startEmailDesk());
  });
  afterAll(async () => {
    await env?.cleanup();
    await smtp?.stop();
  });

  it(`answers ${ROUNDS} mutated envelopes legibly and executes none (seed ${SEED})`, async () => {
    const random = generator(SEED);
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T;
    const text = (max: number) =>
      Array.from({ length: Math.floor(random() * max) }, () =>
        String.fromCodePoint(
          pick([0, 9, 10, 34, 39, 60, 92, 0x2028, 0x1f600, 0xfeff, 65 + Math.floor(random() * 58)]),
        ),
      ).join("");
    const value = (depth = 0): unknown =>
      pick<() => unknown>([
        () => null,
        () => random() < 0.5,
        () => Math.floor(random() * 2 ** 53) * (random() < 0.5 ? -1 : 1),
        () => random() * 1e308,
        () => text(40),
        () => "x".repeat(Math.floor(random() * 70_000)),
        () =>
          depth > 3 ? [] : Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1)),
        () =>
          depth > 3
            ? {}
            : Object.fromEntries(
                Array.from({ length: Math.floor(random() * 4) }, () => [text(8), value(depth + 1)]),
              ),
      ])();
    const paths = [
      ["intent"],
      ["payload"],
      ["payload", "to"],
      ["payload", "to", "0"],
      ["payload", "subject"],
      ["payload", "body"],
      ["payload", "cc"],
      ["rationale"],
      ["run_id"],
      ["__proto__"],
      ["constructor"],
    ];
    let token = "";
    const answers = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round++) {
      // a run may make 100 proposals at once (desk-bounds.ts): each 50 rounds are a run's,
      // so every round reaches the checks behind that share
      if (round % 50 === 0) token = await env.token("elf", `run-fuzz-${round}`);
      let body: unknown;
      if (round % 10 === 9) {
        body = text(200); // not JSON at all, most of the time
      } else {
        const envelope = valid() as Record<string, unknown>;
        const path = pick(paths);
        let at: Record<string, unknown> = envelope;
        for (const key of path.slice(0, -1)) {
          const next = at[key];
          at = (next && typeof next === "object" ? next : {}) as Record<string, unknown>;
        }
        at[path.at(-1) ?? "intent"] = value();
        body = JSON.stringify(envelope);
      }
      const reply = await postAction(env, token, "/submit", body as string);
      answers.set(reply.status, (answers.get(reply.status) ?? 0) + 1);
      expect([202, 400, 403], `round ${round}: ${JSON.stringify(reply.body)}`).toContain(
        reply.status,
      );
      if (reply.status === 400) expect(String(reply.body.error)).toMatch(/^bad envelope: \S+/);
    }
    console.log(
      `envelope fuzz (seed ${SEED}): ${[...answers].map(([status, count]) => `${count}× ${status}`).join(", ")}`,
    );
    expect(answers.get(400) ?? 0).toBeGreaterThan(ROUNDS / 2);
    // whatever was filed waits for a person: nothing went out
    expect(smtp.received).toHaveLength(0);
    for (const gate of listGates(env.paths, "elf")) expect(gate.state).toBe("pending");

    // boundaries of the size limit
    const sized = (bytes: number) => {
      const base = JSON.stringify({ ...valid(), rationale: "" });
      return JSON.stringify({ ...valid(), rationale: "r".repeat(bytes - base.length) });
    };
    expect(Buffer.byteLength(sized(256 * 1024 + 1))).toBe(256 * 1024 + 1);
    const over = await postAction(env, token, "/submit", sized(256 * 1024 + 1));
    expect(over.status).toBe(400);
    expect(String(over.body.error)).toMatch(/over \d+ bytes/);

    // and the host still answers a good one
    const good = await submitAction(env, token, valid());
    expect(good.status).toBe(202);
    expect(smtp.received).toHaveLength(0);
  }, 300_000);
});
