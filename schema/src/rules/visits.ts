/** Visit defaults both sides apply when a visit is scheduled without them. */

/** Minutes a visit takes when scheduled without a duration and without an org policy. */
export const DURATION_BY_TYPE: Readonly<Record<string, number>> = {
  evaluation: 75,
  routine: 45,
  reassessment: 60,
  discharge: 60,
  supervisory: 30,
};

/** Minutes for a visit type with no entry above. */
export const FALLBACK_DURATION_MINUTES = 45;

export const defaultDurationMinutes = (visitType: string): number => DURATION_BY_TYPE[visitType] ?? FALLBACK_DURATION_MINUTES;
