import type { ModelPrice } from "../../../ground/config/grant-schema.ts";
import type { BudgetBook, BudgetRefusal } from "./budget.ts";
import { modelSpendOf } from "./prices.ts";
import type { ModelUsage } from "./usage.ts";

/**
 * The budgets as a gateway shard sees them: one set of counters, kept by the
 * parent gateway process, for every shard. A check or a charge is a question
 * to the parent (answered in the order its shards asked, one at a time), so a
 * worker's limit spent through one shard refuses that worker on every shard;
 * a spend that happened (a model's usage) is told, not asked. The prices that
 * turn usage into a spend are this shard's own copy of the config.
 */
export type BudgetQuestion =
  | { kind: "check"; subject: string; currencies: string[] }
  | {
      kind: "charge";
      subject: string;
      spend: Record<string, number>;
      now: number;
      alsoChecked: string[];
    };

export interface BudgetLink {
  ask(question: BudgetQuestion): Promise<BudgetRefusal | undefined>;
  tell(spend: { subject: string; spend: Record<string, number> }): void;
}

export class SharedBudgets implements BudgetBook {
  constructor(
    private readonly link: BudgetLink,
    private prices: ModelPrice[],
  ) {}

  reconfigure(prices: ModelPrice[]): void {
    this.prices = prices;
  }

  check(subject: string, currencies: string[]): Promise<BudgetRefusal | undefined> {
    if (currencies.length === 0) return Promise.resolve(undefined);
    return this.link.ask({ kind: "check", subject, currencies });
  }

  charge(
    subject: string,
    spend: Record<string, number>,
    now: number,
    alsoChecked: string[],
  ): Promise<BudgetRefusal | undefined> {
    const spent = Object.values(spend).some((amount) => amount > 0);
    if (!spent && alsoChecked.length === 0) return Promise.resolve(undefined);
    return this.link.ask({ kind: "charge", subject, spend, now, alsoChecked });
  }

  record(subject: string, spend: Record<string, number>): void {
    if (Object.values(spend).some((amount) => amount > 0)) this.link.tell({ subject, spend });
  }

  modelSpend(usage: ModelUsage): Record<string, number> {
    return modelSpendOf(usage, this.prices);
  }
}

/** The parent's answer to a shard's question, from its own counters. */
export function answerBudgetQuestion(
  budgets: BudgetBook,
  question: BudgetQuestion,
): BudgetRefusal | undefined | Promise<BudgetRefusal | undefined> {
  return question.kind === "check"
    ? budgets.check(question.subject, question.currencies)
    : budgets.charge(question.subject, question.spend, question.now, question.alsoChecked);
}
