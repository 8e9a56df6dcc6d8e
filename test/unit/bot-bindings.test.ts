import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { botBindings } from "../../runner/ground/config/bot-bindings.ts";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";

/** `[channels]` binds a bot to one worker; a second worker binding the same bot is refused. */

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function configWith(workers: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), "roster-bindings-"));
  roots.push(root);
  for (const [name, body] of Object.entries(workers)) {
    await mkdir(join(root, "workers", name), { recursive: true });
    await writeFile(join(root, "workers", name, "worker.toml"), `name = "${name}"\n\n${body}`);
  }
  const config = loadConfig(root);
  return {
    config,
    errors: config.errors.map(formatConfigError).map((line) => line.replace(`${root}/`, "")),
  };
}

describe("bot bindings", () => {
  it("binds each worker's bots, one per platform", async () => {
    const { config, errors } = await configWith({
      elf: '[channels]\ndiscord = "discord"\nslack = "slack"\n',
      bob: '[channels]\ndiscord = "bob-bot"\n',
      eve: "",
    });
    expect(errors).toEqual([]);
    expect(botBindings(config.workers)).toEqual(
      expect.arrayContaining([
        { worker: "elf", platform: "discord", credential: "discord" },
        { worker: "elf", platform: "slack", credential: "slack" },
        { worker: "bob", platform: "discord", credential: "bob-bot" },
      ]),
    );
    expect(botBindings(config.workers)).toHaveLength(3);
  });

  it("refuses a bot bound twice, naming the file, line and the worker that has it", async () => {
    const { errors } = await configWith({
      bob: '[channels]\ndiscord = "shared"\n',
      elf: '[channels]\nslack = "slack"\ndiscord = "shared"\n',
    });
    expect(errors).toEqual([
      'workers/elf/worker.toml:5: channels.discord: the discord bot "shared" is already bound to worker "bob"; one bot serves one worker',
    ]);
  });

  it("refuses an unknown platform and a malformed credential name", async () => {
    const { errors } = await configWith({ elf: '[channels]\nirc = "x"\nslack = "Not Valid"\n' });
    expect(errors.join("\n")).toMatch(/workers\/elf\/worker\.toml:\d+: channels/);
    expect(errors.length).toBeGreaterThanOrEqual(1);
  });
});
