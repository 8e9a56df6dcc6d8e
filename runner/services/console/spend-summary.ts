import { join } from "node:path";
import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import { type LimitStanding, limitStanding } from "../../boundary/gateway/spend/budget.ts";
import type { ScopedLimit } from "../../ground/config/grant-schema.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { type LogPlace, startOfLog } from "../../ground/files/appended-lines.ts";
import { LogSummary } from "./log-summary.ts";

/**
 * What was spent, as running sums, so the console never reads the whole of
 * audit/usage.jsonl (the gateway's own account, budget.ts): per hour and per
 * minute (epoch-aligned, as budget windows are), per subject, per currency.
 * A limit's window starts on a whole hour (hour, day, month) or a whole
 * minute, so what it has used is a sum of whole buckets: the same figure
 * `roster budget` gives. Each refresh reads only what was appended
 * (files/appended-lines.ts); hours go after 31 days, minutes after two hours.
 */
type Sums = Record<string, Record<string, number>>;

interface SpendFile extends LogPlace {
  version: 1;
  /** epoch hour → subject → currency → amount */
  hours: Record<string, Sums>;
  /** epoch minute → subject → currency → amount */
  minutes: Record<string, Sums>;
}

export interface SpendDay {
  /** "2026-12-02" (UTC) */
  day: string;
  /** worker → currency → amount */
  workers: Record<string, Record<string, number>>;
}

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const KEEP_HOURS = 31 * 24;
const KEEP_MINUTES = 120;

const table = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;
const empty = (): SpendFile => ({ version: 1, ...startOfLog(), hours: table(), minutes: table() });

export class SpendSummary extends LogSummary<SpendFile> {
  constructor(
    auditDir: string,
    /** Where the sums are kept between processes (under state/). */
    file: string,
  ) {
    super(join(auditDir, "usage.jsonl"), file);
  }

  /** What `scope` spent in `currency` from `since` (a whole minute) on. */
  spent(scope: string, currency: string, since: number): number {
    const wholeHour = since % HOUR_MS === 0;
    const buckets = wholeHour ? this.data.hours : this.data.minutes;
    const first = since / (wholeHour ? HOUR_MS : MINUTE_MS);
    let total = 0;
    for (const [key, subjects] of Object.entries(buckets)) {
      if (Number(key) < first) continue;
      for (const [subject, sums] of Object.entries(subjects))
        if (scopeApplies(scope, subject)) total += sums[currency] ?? 0;
    }
    return total;
  }

  /** The limits (those binding `subject`, when given) with their windows' spend. */
  standing(limits: ScopedLimit[], subject?: string, now = Date.now()): LimitStanding[] {
    return limitStanding(limits, (scope, currency, since) => this.spent(scope, currency, since))(
      subject,
      now,
    );
  }

  /** The last `days` UTC days up to `now`, oldest first, days without spend included. */
  days(days: number, now = Date.now()): SpendDay[] {
    const today = Math.floor(now / DAY_MS);
    const out: SpendDay[] = [];
    for (let day = today - days + 1; day <= today; day++)
      out.push({ day: new Date(day * DAY_MS).toISOString().slice(0, 10), workers: {} });
    for (const [key, subjects] of Object.entries(this.data.hours)) {
      const entry = out[Math.floor((Number(key) * HOUR_MS) / DAY_MS) - (today - days + 1)];
      if (!entry) continue;
      for (const [subject, sums] of Object.entries(subjects)) {
        const worker = workerOfSubject(subject);
        const into = entry.workers[worker] ?? {};
        entry.workers[worker] = into;
        for (const [currency, amount] of Object.entries(sums))
          into[currency] = (into[currency] ?? 0) + amount;
      }
    }
    return out;
  }

  protected empty(): SpendFile {
    return empty();
  }

  protected add(raw: string): void {
    let line: { ts_ms?: unknown; subject?: unknown; currency?: unknown; amount?: unknown };
    try {
      line = JSON.parse(raw) as typeof line;
    } catch {
      return; // a torn line from a crash, as budget.ts skips it
    }
    const { ts_ms, subject, currency, amount } = line;
    if (typeof ts_ms !== "number" || typeof subject !== "string") return;
    if (typeof currency !== "string" || typeof amount !== "number") return;
    bump(this.data.hours, Math.floor(ts_ms / HOUR_MS), subject, currency, amount);
    bump(this.data.minutes, Math.floor(ts_ms / MINUTE_MS), subject, currency, amount);
  }

  protected prune(now: number): void {
    const hour = Math.floor(now / HOUR_MS) - KEEP_HOURS;
    const minute = Math.floor(now / MINUTE_MS) - KEEP_MINUTES;
    for (const key of Object.keys(this.data.hours))
      if (Number(key) < hour) delete this.data.hours[key];
    for (const key of Object.keys(this.data.minutes))
      if (Number(key) < minute) delete this.data.minutes[key];
  }

  protected revive(data: Partial<SpendFile>): SpendFile | undefined {
    if (data.version !== 1 || data.ino === undefined || data.offset === undefined) return undefined;
    const revived = (buckets: Record<string, Sums> | undefined) => {
      const out = table<Sums>();
      for (const [key, subjects] of Object.entries(buckets ?? {})) {
        const into = table<Record<string, number>>();
        for (const [subject, sums] of Object.entries(subjects))
          into[subject] = Object.assign(table<number>(), sums);
        out[key] = into;
      }
      return out;
    };
    return {
      version: 1,
      ino: data.ino,
      offset: data.offset,
      ...(typeof data.last === "number" ? { last: data.last } : {}),
      hours: revived(data.hours),
      minutes: revived(data.minutes),
    };
  }
}

function bump(
  buckets: Record<string, Sums>,
  key: number,
  subject: string,
  currency: string,
  amount: number,
): void {
  const subjects = buckets[key] ?? table<Record<string, number>>();
  buckets[key] = subjects;
  // a subject and a currency come from the log: their tables have no prototype to reach
  const sums = subjects[subject] ?? table<number>();
  subjects[subject] = sums;
  sums[currency] = (sums[currency] ?? 0) + amount;
}
