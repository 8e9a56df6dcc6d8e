/**
 * The most common English words: the function words, pronouns and everyday
 * verbs any instruction is made of. A display name that is one of them can't
 * be told from the sentence around it, so the clean-room scan
 * (work/repos/clean-room.ts) doesn't look for it as a name — otherwise a
 * participant named "the" or "Task" would refuse every note or task written
 * from their room. Lower case; compared after lower-casing.
 */
export const COMMON_WORDS: ReadonlySet<string> = new Set(
  `a about above after again all also am an and any are as at be because been before being
  below between both but by can could did do does doing done down during each else even every
  few for from further get go going got had has have having he her here hers him his how i if
  in into is it its just know like make me more most much must my need new no nor not now of
  off on once one only or other our ours out over own please put re same say see she should
  so some such take task tell than thank thanks that the their them then there these they
  this those through to today tomorrow too under until up us use very was way we well were
  what when where which while who whom why will with would yes yet you your yours`
    .split(/\s+/)
    .filter(Boolean),
);
