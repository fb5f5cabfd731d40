import { describe, expect, it } from 'vitest';
import { chatCompletionsRefusal } from '../chat-completions/request.js';
import { messagesOptionRefusal } from '../messages/request.js';

describe('options a vendor bills beyond the token rates', () => {
  it('passes their absence, null and the default values', () => {
    expect(chatCompletionsRefusal({ model: 'm', messages: [] })).toBeUndefined();
    expect(
      chatCompletionsRefusal({
        model: 'm',
        service_tier: null,
        web_search_options: null,
        modalities: ['text'],
        audio: null,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'hi' }, null, 'x'] },
          { role: 'user', content: 'input_audio' },
          null,
        ],
      }),
    ).toBeUndefined();
    expect(chatCompletionsRefusal({ model: 'm', service_tier: 'auto' })).toBeUndefined();
    expect(messagesOptionRefusal({ speed: 'standard', inference_geo: 'global' })).toBeUndefined();
    expect(messagesOptionRefusal({ speed: null, inference_geo: null })).toBeUndefined();
  });

  it('names the first option priced otherwise', () => {
    expect(chatCompletionsRefusal({ model: 'm', service_tier: 'scale' })).toMatch(
      /^service_tier: /,
    );
    expect(chatCompletionsRefusal({ model: 'm', web_search_options: false })).toMatch(
      /^web_search_options: /,
    );
    expect(chatCompletionsRefusal({ model: 'm', modalities: [] })).toBeUndefined();
    expect(chatCompletionsRefusal({ model: 'm', modalities: ['audio'] })).toMatch(/^modalities: /);
    expect(
      chatCompletionsRefusal({
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }],
      }),
    ).toBe('messages.0.content.0: input audio is billed at audio rates, which gw does not price');
    expect(messagesOptionRefusal({ speed: 'FAST' })).toMatch(/^speed: /);
    expect(messagesOptionRefusal({ inference_geo: ['global'] })).toMatch(/^inference_geo: /);
  });
});

describe('audio replayed from an earlier answer (review of decision 332)', () => {
  // An assistant turn may carry `audio: { id }`, a previous audio answer the vendor feeds the
  // model again: billed as audio input tokens, at audio rates, like an input_audio part.
  it('refuses an assistant turn that names a previous audio answer', () => {
    expect(
      chatCompletionsRefusal({
        model: 'm',
        messages: [
          { role: 'user', content: 'say hello' },
          { role: 'assistant', content: 'hello', audio: { id: 'audio_abc123' } },
          { role: 'user', content: 'again, slower' },
        ],
      }),
    ).toMatch(/^messages\.1\.audio: /);
  });

  it('passes an assistant turn whose audio is null', () => {
    expect(
      chatCompletionsRefusal({
        model: 'm',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello', audio: null },
        ],
      }),
    ).toBeUndefined();
  });
});
