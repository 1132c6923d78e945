/**
 * Speech to text behind one small interface, chosen by environment (config.ai.stt):
 * an OpenAI-compatible transcription service, or pocketsphinx offline as the embedded default.
 */
import type { Config } from '../../../config.ts';
import { createOpenAiStt } from './openai-stt.ts';
import { createPocketsphinxStt, pocketsphinxInstalled } from './pocketsphinx.ts';
import type { SpeechToText } from './types.ts';

export { SttError, NO_ENGINE_MESSAGE } from './errors.ts';
export { parsePocketsphinxOutput, pocketsphinxInstalled } from './pocketsphinx.ts';
export { joinSegments } from './segments.ts';
export type { SpeechToText, Transcript, TranscriptSegment } from './types.ts';

/**
 * `auto`: the OpenAI-compatible service when STT_URL is set, else pocketsphinx when it is
 * installed. null: none configured (the pipeline fails with how to configure one).
 */
export function createSpeechToText(config: Config['ai']['stt']): SpeechToText | null {
  const openai = () => (config.url ? createOpenAiStt({ url: config.url, apiKey: config.apiKey, model: config.model, timeoutMs: config.timeoutMs }) : null);
  const sphinx = () =>
    pocketsphinxInstalled(config.pocketsphinx) ? createPocketsphinxStt({ ...config.pocketsphinx, timeoutMs: config.timeoutMs }) : null;
  switch (config.engine) {
    case 'none':
      return null;
    case 'openai':
      return openai();
    case 'pocketsphinx':
      return sphinx();
    case 'auto':
      return openai() ?? sphinx();
  }
}
