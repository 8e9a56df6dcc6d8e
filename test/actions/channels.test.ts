import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/** term_send into a terminal channel's history; sends into a trusted channel run unasked. */
let env: GatewayEnv;
const submit = async (envelope: unknown) => submitAction(env, await env.token("elf"), envelope);

beforeAll(async () => {
  env = await startGatewayEnv(
    '[[action]]\nname = "term-send"\nexecutor = "term"\n\n[[action]]\nname = "purpose-edit"\nexecutor = "purpose"\n',
  );
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  await env?.cleanup();
});

describe("channels", () => {
  it("a terminal channel is trusted unless the operator untrusts it; a room only when trusted", async () => {
    await mkdir(join(env.paths.data, "channels"), { recursive: true });
    const settings = join(env.paths.data, "channels/settings.json");
    await writeFile(settings, JSON.stringify({ untrusted: ["term-ops"] }));
    const held = await submit({
      intent: "term-send",
      payload: { channel_id: "term-ops", text: "deploy done" },
    });
    expect(held.status).toBe(202);

    await writeFile(settings, JSON.stringify({ trusted: ["term-ops"] }));
    const sent = await submit({
      intent: "term-send",
      payload: { channel_id: "term-ops", text: "deploy done" },
    });
    expect(sent).toEqual({
      status: 200,
      body: { status: "done", result: { delivered: "terminal", channel_id: "term-ops" } },
    });
    const history = readFileSync(join(env.paths.data, "channels/term-ops/messages.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(history.at(-1)).toMatchObject({
      author: "elf",
      role: "worker",
      content: "deploy done",
      attachments: [],
    });

    // no entry at all: a terminal channel is direct, so trusted by default
    const byDefault = await submit({
      intent: "term-send",
      payload: { channel_id: "term-dev", text: "hello" },
    });
    expect(byDefault.status).toBe(200);

    const purposeHere = await submit({
      intent: "purpose-edit",
      payload: { channel_id: "term-ops", purpose: "Deploys and on-call." },
    });
    expect(purposeHere.status).toBe(200);
    const purposeInARoom = await submit({
      intent: "purpose-edit",
      payload: { channel_id: "discord-1-general", purpose: "Anything." },
    });
    expect(purposeInARoom.status).toBe(202);
  });

  it("refuses a terminal send to something that is not a terminal channel, naming the field", async () => {
    const reply = await submit({
      intent: "term-send",
      payload: { channel_id: "C0123", text: "hi" },
    });
    expect(reply.status).toBe(400);
    expect(String(reply.body.error)).toMatch(/^bad envelope: payload\.channel_id: /);
  });
});
