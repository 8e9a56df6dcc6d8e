/**
 * How much of a worker's prompt a provider's prompt cache can serve: ten
 * `roster run`s of one worker, one after another, each with a different task,
 * against the scripted model with a provider's prefix cache played over what
 * it receives (test/support/prefix-cache.ts: OpenAI's documented rule; a real
 * provider can't be reached from here). The counts are the ones the provider
 * reports in its usage fields (`prompt_tokens_details.cached_tokens`), as the
 * gateway metered them into audit/decisions.jsonl: per run, the prompt's
 * tokens and the share read from the cache. Needs Docker and the box image.
 *   npx tsx bench/prompt-cache.ts
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PrefixCache } from "../test/support/prefix-cache.ts";
import { ModelServer, makeRosterRoot } from "./harness.ts";

const RUNS = 10;

const model = await new ModelServer().start("0.0.0.0");
model.cache = new PrefixCache();
const root = await makeRosterRoot(model.baseUrl("127.0.0.1"));

interface Usage {
  input?: number;
  cache_read?: number;
}

try {
  const rows: { run: number; prompt: number; cached: number }[] = [];
  for (let run = 1; run <= RUNS; run++) {
    model.play({ text: `done with task ${run}` });
    const ran = await root.roster(["run", "elf", `task ${run}: summarise the notes of day ${run}`]);
    if (ran.code !== 0) throw new Error(`run ${run} failed: ${ran.stderr}`);
    const lines = readFileSync(join(root.paths.audit, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { usage?: Usage });
    const usage = lines.filter((line) => line.usage).at(-1)?.usage;
    if (!usage) throw new Error(`run ${run}: no metered usage in the audit log`);
    const cached = usage.cache_read ?? 0;
    rows.push({ run, prompt: (usage.input ?? 0) + cached, cached });
  }
  console.log("| run | prompt tokens | read from the cache | share |");
  console.log("|---:|---:|---:|---:|");
  for (const row of rows)
    console.log(
      `| ${row.run} | ${row.prompt} | ${row.cached} | ${((100 * row.cached) / row.prompt).toFixed(1)}% |`,
    );
  const later = rows.slice(1);
  const share =
    later.reduce((sum, row) => sum + row.cached, 0) /
    later.reduce((sum, row) => sum + row.prompt, 0);
  console.log(
    `\nruns 2–${RUNS}: ${(100 * share).toFixed(1)}% of prompt tokens read from the cache`,
  );
} finally {
  await root.cleanup();
  await model.stop();
}
