/**
 * Why a transcription failed, in words a clinician can act on. The message is chosen here,
 * never copied from the provider's answer (which could echo PHI or internals); `retryable`
 * tells the pipeline whether another attempt can help (a timeout, a 5xx) or not (no engine,
 * rejected credentials, an answer that is not a transcript).
 */
export class SttError extends Error {
  override readonly name = 'SttError';
  constructor(
    readonly code: string,
    readonly clinicianMessage: string,
    readonly retryable: boolean,
    /** Operator detail for logs: status codes and engine names, never response bodies. */
    detail?: string,
  ) {
    super(detail ? `${code}: ${detail}` : code);
  }
}

export const NO_ENGINE_MESSAGE =
  'No speech-to-text engine is configured on the server. An administrator must set STT_URL (an OpenAI-compatible transcription service) or install pocketsphinx (apt-get install pocketsphinx pocketsphinx-en-us), then retry.';
