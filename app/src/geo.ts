/**
 * The GPS fix stamped on a timer event (EVV). The server requires a position on every event;
 * when the device has none (no permission, no signal within the wait) the event carries
 * 0,0 with the largest accuracy the API accepts, which every consumer reads as "no fix"
 * (routing learns only from fixes of ≤ 50 m) rather than a false place.
 */
export interface Fix {
  readonly latitude: number;
  readonly longitude: number;
  readonly accuracy: number;
  /** False when the position is the "no fix" placeholder. */
  readonly located: boolean;
}

export const NO_FIX: Fix = { latitude: 0, longitude: 0, accuracy: 100_000, located: false };

/** How long a button press waits for a position before recording without one. */
const FIX_WAIT_MS = 5_000;

/** The current position when geolocation is granted (or can be asked for), else {@link NO_FIX}. */
export async function currentFix(): Promise<Fix> {
  if (!('geolocation' in navigator)) return NO_FIX;
  try {
    const permission = await navigator.permissions?.query({ name: 'geolocation' });
    if (permission?.state === 'denied') return NO_FIX;
  } catch {
    // Browsers without the Permissions API for geolocation: ask directly.
  }
  return new Promise<Fix>((resolve) => {
    navigator.geolocation.getCurrentPosition(
      (p) => resolve({ latitude: p.coords.latitude, longitude: p.coords.longitude, accuracy: Math.min(p.coords.accuracy, 100_000), located: true }),
      () => resolve(NO_FIX),
      { enableHighAccuracy: true, timeout: FIX_WAIT_MS, maximumAge: 30_000 },
    );
  });
}
