// Random-text goldens from Hugging Face tokenizers itself (the official Node
// binding), in the format of ../shared/reference/tokenizers/<name>.json:
//   npm install tokenizers@0.23.2
//   node make_random_goldens.js path/to/tokenizer.json SEED N [MIN_UNITS MAX_UNITS] > random_<name>.json
// Texts mix ASCII, scripts, emoji, controls, odd spaces, random code points and
// the tokenizer's own added tokens.
const {Tokenizer} = require('tokenizers');
const [tokpath, seedArg, nArg, minArg, maxArg] = process.argv.slice(2);
const minUnits = Number(minArg) || 1, maxUnits = Number(maxArg) || 20;
let seed = Number(seedArg) || 1;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
const t = Tokenizer.fromFile(tokpath);
const tj = JSON.parse(require('fs').readFileSync(tokpath));
const specials = tj.added_tokens.map(a => a.content).slice(0, 40);
const pools = [
  ' ', '  ', '\n', '\t', '\r\n', 'a', 'the', 'The', 'ing', "'s", "'T", "'ll", 'hello', 'World', '1', '23', '456', '7890',
  '.', ',', '!', '?', '...', '—', '–', '“', '”', '‘', '’', '(', ')', '{', '}', '<', '>', '|', '_', '-', '#', '@', '$',
  'é', 'ü', 'ß', 'İ', 'Σ', 'ς', 'ж', 'щ', 'ع', 'ש', 'ह', 'ि', '中', '文', '日', 'の', '한', '글', 'ก', '่',
  '😀', '🦙', '👍🏽', '👨‍👩‍👧', '🇫🇷', '❤️', '\u200b', '\u200d', '\ufeff', '\u00a0', '\u3000', '\u2028', '\u0301',
  'ﬁ', '①', '²', '½', 'Ⅻ', '٣', '𝟙', '\u0000', '\u0007', '\u007f', '\ufffd', '▁', 'Ġ', 'Ċ', '<0x41>', '##', '</w>',
  '\uD83D\uDE00'.repeat(2), 'aaaa', '    ', '\n\n', ' \n ', 'http://x.y/z?a=1', 'don\'t', 'I\'M',
];
(async () => {
  const cases = [];
  const n = Number(nArg) || 200;
  for (let i = 0; i < n; ++i) {
    let s = '';
    const len = minUnits + Math.floor(rnd() * (maxUnits - minUnits + 1));
    for (let k = 0; k < len; ++k) {
      const r = rnd();
      if (r < 0.05 && specials.length) s += specials[Math.floor(rnd() * specials.length)];
      else if (r < 0.15) s += String.fromCodePoint(32 + Math.floor(rnd() * 95));
      else if (r < 0.2) { let cp = Math.floor(rnd() * 0x2FFFF); if (cp >= 0xD800 && cp < 0xE000) cp = 0x41; s += String.fromCodePoint(cp); }
      else s += pools[Math.floor(rnd() * pools.length)];
    }
    const e = await t.encode(s, null, {addSpecialTokens: false});
    const e2 = await t.encode(s, null, {addSpecialTokens: true});
    const ids = e.getIds();
    cases.push({text: s, ids, ids_with_special: e2.getIds(), decoded: await t.decode(ids, false),
                decoded_skip_special: await t.decode(ids, true)});
  }
  console.log(JSON.stringify({tokenizer: require("path").basename(tokpath), source: "HF tokenizers 0.23.2 (npm tokenizers), seed " + seedArg, cases}));
})();
