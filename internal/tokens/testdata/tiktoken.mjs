// Writes tiktoken.json: token counts by OpenAI's tiktoken (its Rust core,
// through the npm package's WebAssembly build) of a varied corpus and of
// random strings, for TestCountMatchesTiktoken. Run from a directory
// where `npm install tiktoken@1.0.22` was done:
//
//	node internal/tokens/testdata/tiktoken.mjs > internal/tokens/testdata/tiktoken.json
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/");
const { get_encoding } = require("tiktoken");

const encs = ["o200k_base", "cl100k_base"].map((n) => [n, get_encoding(n)]);

const corpus = [
  // code
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Printf(\"%d\\n\", i)\n\t}\n}\n",
  "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint([fib(i) for i in range(20)])\n",
  "const xs = [1, 2, 3].map((x) => x ** 2).filter(Boolean); // squares\nexport default async function* gen() { yield* xs; }\r\n",
  "SELECT e.name, count(*) AS n FROM entities e JOIN observations o ON o.entity_id = e.id WHERE e.scope = ?1 GROUP BY 1 ORDER BY n DESC LIMIT 10;",
  "#include <stdio.h>\nint main(void){printf(\"hi\\n\");return 0;}\n",
  "<div class=\"card\"><a href=\"/x?y=1&amp;z=2\">Link</a></div>\n<!-- comment -->",
  "    indented\n        more\n\t\ttabs\n  \n\n\n   trailing   \n",
  // JSON
  '{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"k":{"type":"integer","minimum":1}},"required":["query"]}',
  '[{"id":1,"ok":true,"v":null,"f":-1.25e-3},{"id":2,"tags":["a","b"],"nested":{"deep":{"deeper":[[],[{}]]}}}]',
  '{\n  "name": "agentd",\n  "version": "1.2.3",\n  "scripts": {\n    "test": "go test ./..."\n  }\n}\n',
  // CJK and other scripts
  "日本語のテキスト、漢字とかな。東京は晴れ。ｶﾀｶﾅ　全角スペース",
  "中文文本测试，包括标点符号：“引号”和《书名号》。",
  "한국어 텍스트입니다. 안녕하세요!",
  "Привет, мир! Как дела? ЁЖИК ёжик",
  "مرحبا بالعالم — نص عربي",
  "שלום עולם",
  "नमस्ते दुनिया, यह एक परीक्षण है।",
  "ไทย ภาษาไทย ไม่มีช่องว่าง",
  "Ελληνικά κείμενα ΚΕΦΑΛΑΙΑ",
  "Ünïcödé çåsę façade naïve coöperate résumé",
  // emoji
  "emoji 😀👍🏽 🇫🇷 👨‍👩‍👧 ❤️ 🏳️‍🌈 1️⃣ #️⃣",
  "😀😀😀😀😀😀😀😀😀😀",
  "🙂 hi 🙂hi hi🙂 🙂🙂 x",
  // whitespace runs
  " ", "  ", "\n", "\n\n\n", " \n \n ", "\r\n\r\n", "\t\t\t", "a \n\n \n b", "x  \n", "x\u00a0\u00a0y", "x\u2003\u2003\u2003y",
  " ".repeat(100), "\n".repeat(50), " \t".repeat(40) + "x", "a" + " ".repeat(17) + "b" + "\n ".repeat(9),
  // long words
  "a".repeat(1000), "ab".repeat(300), "supercalifragilisticexpialidocious ".repeat(5),
  "pneumonoultramicroscopicsilicovolcanoconiosis", "x".repeat(95) + " " + "y".repeat(96),
  "0123456789".repeat(20), "1 12 123 1234 12345 ١٢٣٤ Ⅻ ½¼ ①②",
  "日本".repeat(100), "!?".repeat(150),
  // contractions, cases, marks
  "I'm sure it's fine, isn't it? We'll see, they'd say. YOU'RE, WE'VE, I'M, ſ'ſ 'ſ 'S 'LL 'Ll 'lL",
  "don't'S 'T 're're 've", "''''", "'s", "x's's", "ABCdef ABC abcDEF aBcDeF", "ǅemal ǅ ǈ Ǌ",
  "ʰʰa ʰA Aʰ aʰ", "e\u0301 \u0301a \u0301 A\u0301\u0301b", "ﬁ ß ẞ",
  "!!! !!!\n\n/// :/ ://x /x/ ...\r\n\r\n", "https://example.com/path/to?x=1&y=2#frag", "C:\\Users\\name\\file.txt",
  "tab\tand\vvertical\ffeed", "<|endoftext|> <|fim_prefix|> plain",
];

// A small deterministic generator (mulberry32), so the file is the same
// every time it is written.
let seed = 12;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const pieces = [
  ..."abcxyzABCXYZ0123456789", " ", " ", " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2003", "\u3000",
  ..."'.,;:!?-_/\\\"()[]{}<>@#$%^&*=+|~`", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'D", "'Ll",
  "日", "本", "語", "한", "국", "Ж", "ж", "ǅ", "ʰ", "\u0301", "\u0915\u093f", "ſ", "ß", "ẞ", "١", "Ⅻ", "½", "ﬁ",
  "😀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "ﾀ", "ｱ", "١٢", "the", "The", "THE", "word", "Word", "func", "return",
];
const random = [];
for (let i = 0; i < 1500; i++) {
  const n = 1 + Math.floor(rand() * 40);
  let s = "";
  for (let j = 0; j < n; j++) s += pick(pieces);
  random.push(s);
}

const rows = [];
for (const text of [...corpus, ...random]) {
  const row = { text };
  for (const [name, enc] of encs) row[name] = enc.encode_ordinary(text).length;
  rows.push(row);
}
process.stdout.write(JSON.stringify(rows, null, 1) + "\n");
