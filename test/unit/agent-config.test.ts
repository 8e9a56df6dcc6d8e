import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { judge } from "../../runner/boundary/gateway/judging/judge.ts";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { workerView } from "../../runner/ground/config/worker-view.ts";
import { facts } from "../support/facts.ts";

/** A worker's agent: chosen in worker.toml or org.toml's [engine], and refused where it can't speak the model. */

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function load(files: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), "roster-agent-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), text);
  }
  const config = loadConfig(root);
  const errors = config.errors.map(formatConfigError).map((line) => line.replace(`${root}/`, ""));
  const agentOf = (name: string) => workerView(config, name)?.agent;
  return {
    errors,
    agentOf,
    config,
    warnings: config.warnings.map((w) => w.replace(`${root}/`, "")),
  };
}

const ANTHROPIC = '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n';
const OPENAI = '[model]\nprovider = "openai"\nmodel = "gpt-5"\n';

describe("a worker's agent", () => {
  it("is pi unless org.toml's [engine] or the worker's own agent names another", async () => {
    const { errors, agentOf } = await load({
      "org.toml": `${ANTHROPIC}\n[engine]\nagent = "claude"\n`,
      "workers/elf/worker.toml": 'name = "elf"\n',
      "workers/imp/worker.toml": 'name = "imp"\nagent = "pi"\n',
    });
    expect(errors).toEqual([]);
    expect(agentOf("elf")).toBe("claude");
    expect(agentOf("imp")).toBe("pi");
    const plain = await load({ "org.toml": OPENAI, "workers/elf/worker.toml": 'name = "elf"\n' });
    expect(plain.agentOf("elf")).toBe("pi");
  });

  it("is refused where it can't speak the model's provider, naming file, line and field", async () => {
    const { errors } = await load({
      "org.toml": `${OPENAI}\n[engine]\nagent = "claude"\n`,
      "workers/elf/worker.toml": 'name = "elf"\n\nagent = "codex"\n',
      "workers/imp/worker.toml": 'name = "imp"\n',
    });
    expect(errors).toEqual([
      expect.stringMatching(
        /^org\.toml:6: engine\.agent: "claude": Claude Code speaks only Anthropic's Messages API, and the model's provider is "openai"/,
      ),
    ]);
    const codexOnAnthropic = await load({
      "org.toml": ANTHROPIC,
      "workers/elf/worker.toml": 'name = "elf"\n\nagent = "codex"\n',
    });
    expect(codexOnAnthropic.errors).toEqual([
      expect.stringMatching(
        /^workers\/elf\/worker\.toml:3: agent: "codex": Codex speaks only OpenAI's Responses API.*provider "openai" or "openai-compatible"/,
      ),
    ]);
  });

  it("is one of pi, claude or codex", async () => {
    const { errors } = await load({
      "org.toml": ANTHROPIC,
      "workers/elf/worker.toml": 'name = "elf"\nagent = "aider"\n',
    });
    expect(errors.join("\n")).toMatch(/worker\.toml:2: agent/);
  });

  it("a Claude Code worker's calls home to api.anthropic.com are refused by a rule that names it; its model calls are not", async () => {
    const { errors, config } = await load({
      "org.toml": ANTHROPIC,
      "workers/elf/worker.toml": 'name = "elf"\nagent = "claude"\n',
      "workers/imp/worker.toml": 'name = "imp"\n',
    });
    expect(errors).toEqual([]);
    const ask = (subject: string, path: string) => {
      const ruling = judge(
        config.grants,
        facts({ subject, host: "api.anthropic.com", method: "GET", path }),
        "request",
      );
      return [ruling.verdict, ruling.rule?.name];
    };
    expect(ask("org/elf", "/api/claude_code/settings")).toEqual(["deny", "agent:claude"]);
    expect(ask("org/elf", "/v1/messages")).toEqual(["allow", "model:anthropic"]);
    // pi's worker is judged as before
    expect(ask("org/imp", "/api/claude_code/settings")).toEqual(["allow", "model:anthropic"]);
  });
});
