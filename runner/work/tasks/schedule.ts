import { Cron } from "croner";

/**
 * When a recurring template fires: a 5-field cron expression read in the
 * org's time zone (croner does the calendar, daylight saving included), or an
 * interval ("30m", "6h", "1d") counted from the template's last fire. And the
 * window a fired task may start in ("09:00-17:00", host-local; "22:00-06:00"
 * runs over midnight). Pure: the clock is always passed in.
 */
export const INTERVAL_PATTERN = "^[1-9][0-9]{0,5}(m|h|d)$";
export const WINDOW_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$";

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function intervalMs(every: string): number | undefined {
  if (!new RegExp(INTERVAL_PATTERN).test(every)) return undefined;
  return Number.parseInt(every, 10) * UNIT_MS[every.slice(-1) as keyof typeof UNIT_MS];
}

/** Why a cron expression can't be used, or undefined: five fields, each as cron reads it. */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return `"${expression}" has ${fields.length} fields; a cron expression has 5 (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5"`;
  try {
    const cron = new Cron(expression, { paused: true });
    if (!cron.nextRun(new Date())) return `"${expression}" never fires`;
    return undefined;
  } catch (error) {
    return `"${expression}": ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** What makes a template fire: exactly one of the two. */
export type Cadence = { cron: string; every?: undefined } | { every: string; cron?: undefined };

/**
 * The first fire strictly after `after`. An interval counts on from `anchor`
 * (the fire it follows) in whole steps, so a late tick doesn't shift the
 * schedule; a cron expression reads the calendar in `zone`.
 */
export function nextFire(cadence: Cadence, after: Date, zone: string, anchor?: Date): Date {
  if (cadence.cron !== undefined) {
    const next = new Cron(cadence.cron, { paused: true, timezone: zone }).nextRun(after);
    // an expression that never fires again (a 30 February) parks far away rather than spinning
    return next ?? new Date(8.64e15);
  }
  const step = intervalMs(cadence.every) ?? UNIT_MS.d;
  const from = anchor ?? after;
  if (from.getTime() > after.getTime()) return from;
  const steps = Math.floor((after.getTime() - from.getTime()) / step) + 1;
  return new Date(from.getTime() + steps * step);
}

/** How many fires fall in (from, to]: a catch-up note says how many were missed. */
export function firesBetween(
  cadence: Cadence,
  from: Date,
  to: Date,
  zone: string,
  limit = 1000,
): number {
  let count = 0;
  let cursor = from;
  while (count < limit) {
    const next = nextFire(cadence, cursor, zone, cursor);
    if (next.getTime() > to.getTime()) break;
    count++;
    cursor = next;
  }
  return count;
}

/** Minutes since local midnight in `zone`. */
function localMinutes(now: Date, zone: string): number {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(now);
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value ?? 0);
  return get("hour") * 60 + get("minute");
}

const minutesOf = (clock: string) =>
  Number.parseInt(clock.slice(0, 2), 10) * 60 + Number.parseInt(clock.slice(3, 5), 10);

/** Whether `now` falls in the window (start inclusive, end exclusive); no window is always. */
export function inWindow(window: string | undefined, now: Date, zone: string): boolean {
  if (!window) return true;
  const [start, end] = window.split("-").map(minutesOf);
  if (start === undefined || end === undefined) return false;
  const at = localMinutes(now, zone);
  return start <= end ? at >= start && at < end : at >= start || at < end;
}
