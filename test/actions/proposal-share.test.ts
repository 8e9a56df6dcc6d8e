import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { PROPOSAL_BURST, PROPOSAL_RATE } from "../../runner/services/actions/desk-bounds.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * A run that proposes in a loop, even what its trust runs at once, gets its
 * share of the action host: past it every proposal is refused with when to
 * try again, one journal line says so, and another run proposes as before.
 */
let env: GatewayEnv;

beforeAll(async () => {
  env = await startGatewayEnv(
    '[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "auto"\n',
  );
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
});
afterAll(async () => {
  await env?.cleanup();
});

describe("a run's share of the proposals", () => {
  it("refuses a loop past it without writing each refusal; another run is served", async () => {
    const looping = await env.token("elf", "run-loop");
    const say = (token: string, text: string) =>
      submitAction(env, token, {
        intent: "message-user",
        payload: { text },
        rationale: "looping",
      });
    const answers: Awaited<ReturnType<typeof say>>[] = [];
    for (let i = 0; i < PROPOSAL_BURST + 30 && answers.at(-1)?.status !== 429; i++)
      answers.push(await say(looping, `note ${i}`));
    // the burst ran (its trust said so), then the share said no
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(
      PROPOSAL_BURST,
    );
    expect(answers.at(-1)?.body).toMatchObject({
      status: "denied",
      reason: expect.stringMatching(
        /^this run has proposed more than one run may \(100 at once, then one every 2 s\); nothing was filed: try again in \d+ s, or stop$/,
      ),
      retry_after_secs: expect.any(Number),
    });
    // the loop goes on: what its share refills in that time is all it gets, and
    // each streak of refusals is one journal line, not one a refusal
    const started = performance.now();
    const more: number[] = [];
    for (let i = 0; i < 20; i++) more.push((await say(looping, `more ${i}`)).status);
    const seconds = (performance.now() - started) / 1000;
    const allowed = more.filter((status) => status === 200).length;
    expect(allowed).toBeLessThanOrEqual(1 + Math.ceil(seconds * PROPOSAL_RATE));
    expect(more.filter((status) => status === 429)).toHaveLength(20 - allowed);
    const refusals = readJournal(env.paths, "elf", 1_000).filter(
      (event) => event.kind === "action-refused" && event.run_id === "run-loop",
    );
    expect(refusals.length).toBeGreaterThanOrEqual(1);
    expect(refusals.length).toBeLessThanOrEqual(1 + allowed);

    const quiet = await env.token("elf", "run-quiet");
    expect((await say(quiet, "hello")).status).toBe(200);
  });
});
