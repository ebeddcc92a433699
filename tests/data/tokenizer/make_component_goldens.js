// Generates components.json: expected outputs of Hugging Face tokenizers for
// small tokenizer.json configurations, one suite per component behaviour.
// The expected values come from HF itself (the official Node binding):
//   npm install tokenizers@0.23.2 && node make_component_goldens.js > components.json
// (run in a scratch directory; NODE_PATH may point at its node_modules).
const {Tokenizer, byteLevelAlphabet} = require('tokenizers');

const TEXTS = [
  'Hello World', '  leading and trailing  ', 'Ünïcödé çàfé naïve', 'ﬁ ligature ① ² Ⅻ ㌀',
  'İstanbul ΣΑΣ ß', 'tabs\tand\nnewlines\r\n', 'a\u0000b\u0001c\u200bd\ufeffe\u00a0f\u3000g',
  '中文字符 and 日本語', 'e\u0301 A\u030A \u0344', 'x² ab_c x\u200dy', "don't stop-believing!!! (ok)",
  '3.14159 and 12345 ٣٤ ½', '▁already▁metaspace', 'emoji 👍🏽 🤖', '$$ ¿Qué? «quotes» — dash',
  '', ' ', 'a  b   c', "I'm you're HE'S We'LL", '\u2028line\u2029para\u0085nel',
  // Characters newer than the Unicode tables of HF's crates (8.0 / 9.0).
  'a\u08D4b\u0AFAc \u2E43 x\u2E52y \u0604\u08E2z \u32FF a\u07FD\u0316 a\u0301\u0316 \uA7F2 \u{11938}',
];

function base(extra) {
  return Object.assign({version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null,
    model: {type: 'WordLevel', vocab: {'[UNK]': 0}, unk_token: '[UNK]'}}, extra);
}

// A vocab holding every single character the merges need plus merge results.
function bpeModel(chars, merges, extra) {
  const vocab = {};
  let id = 0;
  for (const c of chars) if (!(c in vocab)) vocab[c] = id++;
  for (const m of merges) {
    const [a, b] = m.split(' ');
    for (const t of [a, b]) if (!(t in vocab)) vocab[t] = id++;
    let bb = b;
    if (extra && extra.continuing_subword_prefix && bb.startsWith(extra.continuing_subword_prefix))
      bb = bb.slice(extra.continuing_subword_prefix.length);
    if (!((a + bb) in vocab)) vocab[a + bb] = id++;
  }
  return Object.assign({type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab, merges}, extra || {});
}

const suites = [];
const PRECOMPILED_CUSTOM = 'AAQAAAAAAQBBAAEAEgAAgEIFAAANAACAgQ0AABYAAICgPQAAAAAAgJcNAAACAACAlhgCAIERAACscAIAgAQCAIAdAACBBQAADwAAgKEFAAAHAACAggkAAIMJAAAJAACACwAAgBkAAICeCQAAvnQCAB0AAIC9KAIAvLgCACEAAIC+9AIAtuEAACUAAICA8QAAn3QCAAQAAIBlhQAAmDgCAIUZAACAMQAAKAAAACsAAAAqAAAALQAAACwAAAAvAAAALgAAADEAAAAwAAAAMwAAADIAAAA1AAAANAAAADcAAAA2AAAAOQAAADgAAAA7AAAAOgAAAD0AAAA8AAAAPwAAAD4AAABBAAAAQAAAAEMAAABCAAAARQAAAEQAAABHAAAARgAAAEkAAABIAAAASwAAAEoAAABNAAAATAAAAE8AAABOAAAAUQAAAFAAAABTAAAAUgAAAFUAAABUAAAAVwAAAFYAAABZAAAAWAAAAFsAAABaAAAAXQAAAFwAAABfAAAAXgAAAGEAAABgAAAAYwAAAGIAAABlAAAAZAAAAGcAAABmAAAAaQAAAGgAAABrAAAAagAAAG0AAABsAAAAbwAAAG4AAABxAAAAcAAAAHMAAAByAAAAdQAAAHQAAAB3AAAAdgAAAHkAAAB4AAAAewAAAHoAAAB9AAAAfAAAAH8AAAB+AAAAgQAAAIAAAADClAAAw3QAAIUAAACEAAAAhwAAAIYAAACJAAAAiAAAAIsAAACKAAAAjQAAAIwAAACPAAAAjgAAAJEAAACQAAAAkwAAAJIAAACVAAAAlAAAAJcAAACWAAAAmQAAAJgAAACbAAAAmgAAAJ0AAACcAAAAnwAAAJ4AAAChAAAAoAAAAOL8AADjtAAApQAAAKQAAACnAAAApgAAAKkAAACoAAAAqwAAAKoAAACtAAAArAAAAK8AAADvOAAA8DAAALAAAACzAAAAsgAAALUAAAC0AAAAtwAAALYAAAC5AAAAuAAAALsAAAC6AAAAvQAAALwAAAC/AAAAvgAAAMEAAADAAAAAwwAAAMIAAADFAAAAxAAAAMcAAADGAAAAzDABAMgAAADLAAAAygAAAM0AAADMAAAAzwAAAM4AAADRAAAA0AAAANMAAADSAAAA1QAAANQAAADXAAAA1gAAANkAAADYAAAA2wAAANoAAADdAAAA3AAAAN8AAADeAAAA4QAAAOAAAADjAAAA4gAAAOUAAADkAAAA5wAAAOYAAADpAAAA6AAAAOsAAADqAAAA7QAAAOwAAADvAAAA7gAAAPEAAADwAAAA8wAAAPIAAAD1AAAA9AAAAPcAAADvTAEA+QAAAPgAAAD7AAAA+gAAAP0AAAD8AAAA/wAAAP4AAAAgACoAOikAQQBiAGMAZQBmaQB4eXoAw6kA44KrAOOCrADjgr8A44OKAA==';

async function runTokenizer(name, tok, texts, opts) {
  // HF assigns ids to added tokens that are not in the model vocab in order
  // after it (the JSON ids must agree): renumber them so the file is consistent.
  const vocab = tok.model.vocab;
  if (!Array.isArray(vocab)) {
    let next = Math.max(-1, ...Object.values(vocab)) + 1;
    const remap = {};
    tok.added_tokens = tok.added_tokens.map(a => {
      const id = (a.content in vocab) ? vocab[a.content] : next++;
      remap[a.id] = id;
      return Object.assign({}, a, {id});
    });
    const fix = pp => {
      if (!pp) return;
      if (pp.special_tokens) for (const k in pp.special_tokens)
        pp.special_tokens[k].ids = pp.special_tokens[k].ids.map(i => remap[i] ?? i);
      for (const sub of pp.processors || []) fix(sub);
    };
    fix(tok.post_processor);
  }
  const t = Tokenizer.fromString(JSON.stringify(tok));
  const cases = [];
  for (const text of texts) {
    const e = await t.encode(text, null, {addSpecialTokens: false});
    const e2 = await t.encode(text, null, {addSpecialTokens: true});
    const ids = e.getIds();
    cases.push({text, ids, tokens: e.getTokens(), ids_with_special: e2.getIds(),
                decoded: await t.decode(ids, false), decoded_skip_special: await t.decode(ids, true)});
  }
  const pairs = [];
  for (const [a, b] of (opts && opts.pairs) || []) {
    const e = await t.encode(a, b, {addSpecialTokens: true});
    const e0 = await t.encode(a, b, {addSpecialTokens: false});
    pairs.push({a, b, ids_with_special: e.getIds(), ids: e0.getIds()});
  }
  suites.push({name, kind: 'tokenizer', tokenizer: tok, cases, pairs});
}

function addNormalizer(name, normalizer, extraTexts) {
  const t = Tokenizer.fromString(JSON.stringify(base({normalizer})));
  const cases = TEXTS.concat(extraTexts || []).map(text => ({text, normalized: t.getNormalizer().normalizeString(text)}));
  suites.push({name, kind: 'normalizer', component: normalizer, cases});
}

function addPreTokenizer(name, pre_tokenizer, texts) {
  const t = Tokenizer.fromString(JSON.stringify(base({pre_tokenizer})));
  const cases = (texts || TEXTS).map(text => ({
    text, pieces: t.getPreTokenizer().preTokenizeString(text).map(x => x[0])}));
  suites.push({name, kind: 'pre_tokenizer', component: pre_tokenizer, cases});
}

function addDecoder(name, decoder, token_lists) {
  const t = Tokenizer.fromString(JSON.stringify(base({decoder})));
  const cases = token_lists.map(tokens => ({tokens, text: t.getDecoder().decode(tokens)}));
  suites.push({name, kind: 'decoder', component: decoder, cases});
}

(async () => {
  // ---- normalizers
  for (const f of ['NFC', 'NFD', 'NFKC', 'NFKD', 'Lowercase', 'StripAccents', 'Nmt', 'ByteLevel'])
    addNormalizer(f, {type: f});
  addNormalizer('Replace-string', {type: 'Replace', pattern: {String: '  '}, content: '_'});
  addNormalizer('Replace-regex', {type: 'Replace', pattern: {Regex: '\\s+'}, content: ' '});
  addNormalizer('Replace-regex-class', {type: 'Replace', pattern: {Regex: '[aeiou]+'}, content: '*'});
  addNormalizer('Prepend', {type: 'Prepend', prepend: '▁'});
  addNormalizer('Strip-both', {type: 'Strip', strip_left: true, strip_right: true});
  addNormalizer('Strip-left', {type: 'Strip', strip_left: true, strip_right: false});
  addNormalizer('Bert-default', {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                                 strip_accents: null, lowercase: true});
  addNormalizer('Bert-cased', {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                               strip_accents: null, lowercase: false});
  addNormalizer('Bert-strip-no-lower', {type: 'BertNormalizer', clean_text: false,
                                        handle_chinese_chars: false, strip_accents: true, lowercase: false});
  addNormalizer('Sequence-NFD-StripAccents-Lowercase', {type: 'Sequence', normalizers: [
    {type: 'NFD'}, {type: 'StripAccents'}, {type: 'Lowercase'}]});
  addNormalizer('Sequence-Nmt-NFKC-Replace', {type: 'Sequence', normalizers: [
    {type: 'Nmt'}, {type: 'NFKC'}, {type: 'Replace', pattern: {Regex: ' {2,}'}, content: ' '}]});

  // A SentencePiece precompiled charsmap built by spm_train (sentencepiece
  // 0.1.97) from custom rules: fullwidth A/b/c, ligature fi, "e"->"e" and
  // "e"+U+0301 -> "é" (a key that prefixes another), halfwidth katakana with a
  // two-character key, odd spaces -> " ", "AB" -> "xyz", U+1F600 -> ":)", × -> *.
  addNormalizer('Precompiled-custom', {type: 'Precompiled', precompiled_charsmap: PRECOMPILED_CUSTOM}, [
    'Ａｂｃ ﬁne café cafe\u0301 ｶﾞｶﾀﾅ AB ABC 😀 ×\u3000x', 'e\u0301\u0301', 'ee\u0301', 'A\u0301B', 'ｶﾞ', 'ｶ',
    '🏳️‍🌈 👍🏽 x\u0308\u0301y क्षि ก่ \r\n', 'AAB ABAB Ａ\u0301']);

  // ---- pre-tokenizers
  addPreTokenizer('ByteLevel-prefix-regex', {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true});
  addPreTokenizer('ByteLevel-noprefix-regex', {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true});
  addPreTokenizer('ByteLevel-noregex', {type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false});
  for (const b of ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous']) {
    addPreTokenizer('Split-string-' + b, {type: 'Split', pattern: {String: ' '}, behavior: b, invert: false});
    addPreTokenizer('Split-regex-' + b, {type: 'Split', pattern: {Regex: '\\s+|[.!]'}, behavior: b, invert: false});
    addPreTokenizer('Split-regex-invert-' + b, {type: 'Split', pattern: {Regex: '\\w+'}, behavior: b, invert: true});
    addPreTokenizer('Punctuation-' + b, {type: 'Punctuation', behavior: b});
  }
  addPreTokenizer('Split-llama3', {type: 'Split', pattern: {Regex:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    behavior: 'Isolated', invert: false});
  addPreTokenizer('Split-digits-d', {type: 'Split', pattern: {Regex: '\\d+|\\s'}, behavior: 'Isolated', invert: false});
  for (const s of ['always', 'first', 'never'])
    for (const split of [true, false])
      addPreTokenizer(`Metaspace-${s}-${split}`, {type: 'Metaspace', replacement: '▁', prepend_scheme: s, split});
  addPreTokenizer('Digits-individual', {type: 'Digits', individual_digits: true});
  addPreTokenizer('Digits-contiguous', {type: 'Digits', individual_digits: false});
  addPreTokenizer('Whitespace', {type: 'Whitespace'});
  addPreTokenizer('WhitespaceSplit', {type: 'WhitespaceSplit'});
  addPreTokenizer('BertPreTokenizer', {type: 'BertPreTokenizer'});
  addPreTokenizer('CharDelimiterSplit', {type: 'CharDelimiterSplit', delimiter: 'a'});
  addPreTokenizer('Sequence-Whitespace-Digits', {type: 'Sequence', pretokenizers: [
    {type: 'WhitespaceSplit'}, {type: 'Digits', individual_digits: true}]});

  // ---- decoders
  addDecoder('ByteLevel', {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true}, [
    ['Hello', 'Ġworld', 'Ċ', 'âĢ', 'Ļ'], ['<|eot|>', 'ĠĠ', 'hello world', 'Ġ!'],
    ['ð', 'Ł'], ['ð', 'Ł', 'ĺ', 'Ģ'], ['Ã', 'a', 'í', 'Ġb'], []]);
  addDecoder('Metaspace-always', {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true}, [
    ['▁Hello', '▁world'], ['▁▁x', '▁y▁z'], ['Hello▁', 'there'], ['▁'], []]);
  addDecoder('Metaspace-never', {type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true}, [
    ['▁Hello', '▁world'], ['▁▁x', '▁y▁z']]);
  addDecoder('ByteFallback', {type: 'ByteFallback'}, [
    ['<0x61>', '<0xE2>', '<0x96>', '<0x81>', 'a'], ['<0xFF>', '<0xE2>', 'b'], ['<0x4G>', '<0x0a>', '<0x0A>'],
    ['<0xE2>', '<0x96>'], ['x', '<0x41>', '<0x42>', 'y']]);
  addDecoder('Fuse', {type: 'Fuse'}, [['a', 'b', ' c'], []]);
  addDecoder('Strip', {type: 'Strip', content: ' ', start: 1, stop: 0}, [['  a', ' b ', 'c  ']]);
  addDecoder('Strip-2-1', {type: 'Strip', content: 'x', start: 2, stop: 1}, [['xxxaxx', 'xb', 'axx']]);
  addDecoder('Replace', {type: 'Replace', pattern: {String: '▁'}, content: ' '}, [['▁a▁▁b', 'c▁']]);
  addDecoder('WordPiece', {type: 'WordPiece', prefix: '##', cleanup: true}, [
    ['hello', '##world', ',', 'i', 'do', 'not', 'know', '.', 'it', "'", 's', 'ok', '!', 'can', "n't", '?'],
    ['##start', 'a', '##b']]);
  addDecoder('WordPiece-nocleanup', {type: 'WordPiece', prefix: '##', cleanup: false}, [
    ['hello', '##world', ',', 'do', 'not', '.']]);
  addDecoder('BPEDecoder', {type: 'BPEDecoder', suffix: '</w>'}, [['hel', 'lo</w>', 'wor', 'ld</w>'], ['a</w>b</w>']]);
  addDecoder('CTC', {type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true}, [
    ['<pad>', 'h', 'h', 'e', '<pad>', 'l', 'l', '<pad>', 'l', 'o', '|', 'w', 'o', '|', '.']]);
  addDecoder('Sequence-llama2', {type: 'Sequence', decoders: [
    {type: 'Replace', pattern: {String: '▁'}, content: ' '}, {type: 'ByteFallback'}, {type: 'Fuse'},
    {type: 'Strip', content: ' ', start: 1, stop: 0}]}, [
    ['▁Hello', '▁', '<0xE2>', '<0x9C>', '<0x85>', '▁world'], ['▁▁a']]);

  // ---- whole tokenizers
  const alphabet = byteLevelAlphabet();
  const blMerges = ['h e', 'l l', 'he ll', 'hell o', 'Ġ w', 'o r', 'Ġw or', 'Ġwor l', 'Ġworl d', 'Ġ h',
                    'Ġh e', 'Ġhe ll', 'Ġhell o', 'w o', 'wo r', 'wor d', 'Ġ t', 'Ġt h', 'Ġth e'];
  const added = [
    {id: 1000, content: '<|special|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true},
    {id: 1001, content: '<lstrip>', single_word: false, lstrip: true, rstrip: false, normalized: false, special: true},
    {id: 1002, content: '<rstrip>', single_word: false, lstrip: false, rstrip: true, normalized: false, special: false},
    {id: 1003, content: 'word', single_word: true, lstrip: false, rstrip: false, normalized: false, special: false},
    {id: 1004, content: 'hello', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false},
    {id: 1005, content: '<both>', single_word: false, lstrip: true, rstrip: true, normalized: false, special: true},
    {id: 1006, content: '<|a|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true},
    {id: 1007, content: '<|a|>b', single_word: false, lstrip: false, rstrip: false, normalized: false, special: false},
  ];
  const addedTexts = ['x <lstrip> y', 'x <rstrip>   y', 'sword word words word. _word', 'HELLO Hello hello',
    '<|special|><|special|>', 'a<|a|>b c <|a|>', '  <both>  z', '', 'hello world the word',
    '<lstrip><lstrip>  <rstrip> <rstrip>', 'Hello\nworld', '\u00e9word word\u00e9 1word word2'];
  await runTokenizer('bytelevel-bpe-added', {version: '1.0', truncation: null, padding: null,
    added_tokens: added, normalizer: {type: 'Lowercase'},
    pre_tokenizer: {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true},
    post_processor: {type: 'TemplateProcessing', single: [{SpecialToken: {id: '<|special|>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}],
      pair: [{Sequence: {id: 'A', type_id: 0}}, {SpecialToken: {id: '<|a|>', type_id: 0}}, {Sequence: {id: 'B', type_id: 1}}],
      special_tokens: {'<|special|>': {id: '<|special|>', ids: [1000], tokens: ['<|special|>']},
                       '<|a|>': {id: '<|a|>', ids: [1006], tokens: ['<|a|>']}}},
    decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: bpeModel(alphabet, blMerges)}, addedTexts, {pairs: [['hello', 'world'], ['', 'x'], ['a b', '']]});
  await runTokenizer('bytelevel-bpe-prefix-ignore-merges', {version: '1.0', truncation: null, padding: null,
    added_tokens: added.slice(0, 2),  normalizer: null,
    pre_tokenizer: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    post_processor: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: Object.assign(bpeModel(alphabet, blMerges), {ignore_merges: true})},
    ['hello world', 'Hello <|special|>world', ' the word', 'x <lstrip>hello', 'hellohello']);

  // SentencePiece-style BPE with byte fallback and Metaspace "first".
  const spChars = ['<unk>', '<s>', '</s>'];
  for (let b = 0; b < 256; ++b) spChars.push('<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');
  for (const c of '▁abcdefghijklmnopqrstuvwxyz.,!') spChars.push(c);
  const spMerges = ['▁ h', 'e l', '▁h el', 'l o', '▁hel lo', '▁ w', 'o r', '▁w or', '▁wor l', '▁worl d', '▁ ▁'];
  const spTok = (scheme, split) => ({version: '1.0', truncation: null, padding: null,
    added_tokens: [{id: 0, content: '<unk>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true},
                   {id: 1, content: '<s>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true},
                   {id: 2, content: '</s>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true}],
    normalizer: null,
    pre_tokenizer: {type: 'Metaspace', replacement: '▁', prepend_scheme: scheme, split},
    post_processor: {type: 'TemplateProcessing', single: [{SpecialToken: {id: '<s>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}],
      pair: [{SpecialToken: {id: '<s>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}, {SpecialToken: {id: '</s>', type_id: 0}}, {Sequence: {id: 'B', type_id: 1}}],
      special_tokens: {'<s>': {id: '<s>', ids: [1], tokens: ['<s>']}, '</s>': {id: '</s>', ids: [2], tokens: ['</s>']}}},
    decoder: {type: 'Metaspace', replacement: '▁', prepend_scheme: scheme, split},
    model: bpeModel(spChars, spMerges, {unk_token: '<unk>', fuse_unk: true, byte_fallback: true})});
  const spTexts = ['hello world', ' hello  world', '<s>hello world', 'hello <s> world</s>', 'Hello Wörld ☃!',
                   'hello\nworld', '', '<s>', 'a<s> b'];
  for (const s of ['always', 'first', 'never'])
    for (const split of [true, false])
      await runTokenizer(`sp-bpe-metaspace-${s}-${split}`, spTok(s, split), spTexts,
                         {pairs: [['hello', 'world']]});

  // BPE with subword prefix/suffix and (non-fused) unk.
  for (const fuse of [true, false]) {
    await runTokenizer(`bpe-prefix-suffix-unk-fuse-${fuse}`, {version: '1.0', truncation: null, padding: null,
      added_tokens: [{id: 0, content: '<unk>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true}],
      normalizer: {type: 'Lowercase'}, pre_tokenizer: {type: 'Whitespace'}, post_processor: null,
      decoder: {type: 'BPEDecoder', suffix: '</w>'},
      model: bpeModel(['<unk>', 'h', '##e', '##l', '##o', '##o</w>', 'w', '##r', '##d</w>', 'l', '##l</w>', 'a</w>'],
                      ['h ##e', 'he ##l', 'hel ##l', 'hell ##o</w>', 'w ##o', 'wo ##r'],
                      {unk_token: '<unk>', fuse_unk: fuse, continuing_subword_prefix: '##', end_of_word_suffix: '</w>'})},
      ['hello world', 'HELLO, all', 'xyz hexxo', 'a', 'hello!!']);
  }

  // WordPiece with a short max_input_chars_per_word, Bert processing.
  const wpVocab = {'[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, 'un': 4, '##aff': 5, '##able': 6, 'aff': 7,
                   'able': 8, 'a': 9, '##a': 10, ',': 11, 'b': 12, '##b': 13, 'hello': 14};
  await runTokenizer('wordpiece-bert', {version: '1.0', truncation: null, padding: null,
    added_tokens: [0, 1, 2, 3].map(i => ({id: i, content: Object.keys(wpVocab)[i], single_word: false, lstrip: false, rstrip: false, normalized: false, special: true})),
    normalizer: {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true},
    pre_tokenizer: {type: 'BertPreTokenizer'},
    post_processor: {type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2]},
    decoder: {type: 'WordPiece', prefix: '##', cleanup: true},
    model: {type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 6, vocab: wpVocab}},
    ['unaffable', 'unaff', 'aaaaaa', 'aaaaaaa', 'Ünaff, able', 'hello [SEP] b', 'xyz ab', ''],
    {pairs: [['unaff', 'able'], ['a', '']]});

  // Unigram with byte fallback, Roberta processing.
  const ugVocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0]];
  for (let b = 0; b < 256; ++b) ugVocab.push(['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>', -20]);
  for (const [p, s] of [['▁', -2], ['▁hello', -5], ['▁he', -4], ['llo', -4], ['h', -6], ['e', -6], ['l', -6],
                        ['o', -6], ['▁world', -7], ['▁w', -5], ['orld', -5], ['w', -6], ['r', -6], ['d', -6],
                        ['▁a', -3], ['a', -3], ['ab', -5], ['b', -4], ['▁ab', -6]])
    ugVocab.push([p, s]);
  for (const bf of [true, false])
    await runTokenizer(`unigram-bytefallback-${bf}`, {version: '1.0', truncation: null, padding: null,
      added_tokens: ['<s>', '<pad>', '</s>', '<unk>'].map((c, i) => ({id: i, content: c, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true})),
      normalizer: null, pre_tokenizer: {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true},
      post_processor: {type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: true},
      decoder: {type: 'Sequence', decoders: [{type: 'ByteFallback'}, {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true}]},
      model: {type: 'Unigram', unk_id: 3, vocab: ugVocab, byte_fallback: bf}},
      ['hello world', 'ab abab', 'héllo wörld', 'xyz', '☃☃ a', ''], {pairs: [['hello', 'world']]});

  // Duplicated Unigram pieces resolve to the last entry (id and score).
  await runTokenizer('unigram-duplicates', {version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: null, pre_tokenizer: {type: 'WhitespaceSplit'}, post_processor: null, decoder: null,
    model: {type: 'Unigram', unk_id: 0, byte_fallback: false,
            vocab: [['<unk>', 0], ['a', -1], ['b', -1], ['a', -5], ['ab', -5.5], ['c', -2], ['c', -0.5]]}},
    ['ab a', 'abab', 'ba c cc', 'x']);

  // Sequence post-processor (ByteLevel then template), as Llama-3 repositories ship.
  await runTokenizer('sequence-post-processor', {version: '1.0', truncation: null, padding: null,
    added_tokens: [added[0]], normalizer: null,
    pre_tokenizer: {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true},
    post_processor: {type: 'Sequence', processors: [
      {type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true},
      {type: 'TemplateProcessing', single: [{SpecialToken: {id: '<|special|>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}],
       pair: [{SpecialToken: {id: '<|special|>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}, {SpecialToken: {id: '<|special|>', type_id: 1}}, {Sequence: {id: 'B', type_id: 1}}],
       special_tokens: {'<|special|>': {id: '<|special|>', ids: [1000], tokens: ['<|special|>']}}}]},
    decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: bpeModel(alphabet, blMerges)}, ['hello world'], {pairs: [['hello', 'world']]});

  process.stdout.write(JSON.stringify({source: 'HF tokenizers 0.23.2 (npm tokenizers, Node binding)', suites}) + '\n');
})();
