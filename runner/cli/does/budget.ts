/**
 * What `roster budget` prints: each budget limit's spend and what is left in
 * its window, as lines or one JSON object a limit. Loaded only when the
 * command runs.
 */

import type { LimitStanding } from "../../boundary/gateway/spend/budget.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { RosterError } from "../../ground/errors.ts";

/** `roster budget`: refused on an invalid config or a worker that does not exist. */
export async function budgetCommand(flags: { worker?: string; json?: boolean }): Promise<void> {
  const { loadValidConfig } = await import("../../ground/config/valid-config.ts");
  const paths = rosterPaths();
  const config = loadValidConfig(paths);
  if (flags.worker && !config.workers.has(flags.worker))
    throw new RosterError(`no worker named "${flags.worker}"`, { exitCode: 2 });
  const { Budgets } = await import("../../boundary/gateway/spend/budget.ts");
  const budgets = new Budgets(
    paths.audit,
    config.meters,
    config.limits,
    config.org.budget?.price ?? [],
  );
  const standing = budgets.standing(flags.worker ? workerSubject(flags.worker) : undefined);
  if (flags.json) {
    for (const limit of standing) process.stdout.write(`${JSON.stringify(limit)}\n`);
    return;
  }
  process.stdout.write(formatStanding(standing));
}

const amount = (currency: string, value: number) =>
  currency === "usd"
    ? `$${value.toFixed(4)}`
    : Number.isInteger(value)
      ? String(value)
      : value.toFixed(4);

function formatStanding(standing: LimitStanding[]): string {
  if (standing.length === 0)
    return "no budget limits ([[budget.limit]] in org.toml or worker.toml)\n";
  return `${standing
    .map(
      (limit) =>
        `${limit.scope.padEnd(14)} ${limit.currency.padEnd(7)} ${limit.window.padEnd(6)} ${amount(limit.currency, limit.used)} of ${amount(limit.currency, limit.max)} used, ${amount(limit.currency, limit.remaining)} left; resets ${limit.resets_at.slice(0, 16).replace("T", " ")} UTC`,
    )
    .join("\n")}\n`;
}
