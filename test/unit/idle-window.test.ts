import { describe, expect, it } from "vitest";
import { idleSecsFor } from "../../runner/work/sessions/session.ts";

/**
 * Which `[box]` idle window holds a warm session open is the platform's own
 * word (its terms' `idle`), read from the list the suite's setup reads as the
 * roster command does: the terminal's is roster talk's, every chat's is chat's.
 */
describe("a warm session's idle window", () => {
  const box = { talk_idle_secs: 300, chat_idle_secs: 1800 };

  it("is talk_idle_secs for the terminal, whose terms say so", () => {
    expect(idleSecsFor(box, "term")).toBe(300);
  });

  it("is chat_idle_secs for a chat platform, and for a name no platform declares", () => {
    expect(idleSecsFor(box, "discord")).toBe(1800);
    expect(idleSecsFor(box, "slack")).toBe(1800);
    expect(idleSecsFor(box, "fax")).toBe(1800);
  });
});
