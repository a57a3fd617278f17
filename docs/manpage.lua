-- SPDX-License-Identifier: MIT
--
-- manpage.lua: the pandoc filter that turns a page of docs/ into a manual
-- page (-M mode=man, with -t man) or into the text `cloister help COMMAND`
-- prints (-M mode=help, with -t plain). Both modes read the same markdown
-- and rewrite it the same way, so the help text and the man page can only
-- differ in layout, never in what they say.
--
-- The page convention (docs/hacking.md, "Manual pages"):
--   # NAME(SECTION)                 the first heading: the man page's name
--   ## Name                         one line, "NAME — what it is"
--   ## Synopsis, ## Description, ## Options, ## Exit status, ## See also ...
--
-- man mode: the title becomes .TH, every other heading moves up one level
-- (## → .SH, in capitals as man pages have them; ### → .SS).
-- help mode: only Synopsis, Options and Exit status are kept, at level 1;
-- the Name line goes into the metadata (`summary`) for the template.
-- In both, a link to another page of docs/ becomes a man reference
-- (cloister-run(1)) when that page is a man page, else the path where the
-- page is installed (-M docdir=...). Links inside the manual go nowhere on
-- a terminal, so none is left as a bare relative URL.

local mode = 'man'
local docdir = '/usr/share/doc/cloister'
local srcdir = '.'

-- Sections `cloister help COMMAND` shows, by their lower-cased heading.
local help_sections = { ['synopsis'] = true, ['options'] = true, ['exit status'] = true }

local function meta_string(v)
  if v == nil then
    return nil
  end
  return pandoc.utils.stringify(v)
end

-- "# cloister-run(1)" → "cloister-run", "1"
local function parse_title(text)
  return text:match('^([%w][%w._-]*)%((%d)%)$')
end

-- The man name of docs/FILE: from its first heading, read from the file.
local xref_cache = {}
local function man_ref(file)
  if xref_cache[file] ~= nil then
    return xref_cache[file] or nil
  end
  local ref = false
  local f = io.open(srcdir .. '/' .. file, 'r')
  if f then
    for line in f:lines() do
      if line:match('^#%s') then
        local name, section = parse_title(line:gsub('^#%s+', ''):gsub('%s+$', ''))
        if name then
          ref = { name = name, section = section }
        end
        break
      end
    end
    f:close()
  end
  xref_cache[file] = ref
  return ref or nil
end

-- A section heading in capitals, as man pages have them; code (`--commit`,
-- `[workspace]`) keeps its case.
local function upper_inlines(content)
  return pandoc.List(content):map(function(el)
    if el.t == 'Str' then
      return pandoc.Str(pandoc.text.upper(el.text))
    end
    return el
  end)
end

local function ref_inlines(ref)
  return { pandoc.Strong({ pandoc.Str(ref.name) }), pandoc.Str('(' .. ref.section .. ')') }
end

-- An installed file's path. In a man page, in italics as man pages name
-- files, and breakable after each slash, so that a long path still fits a
-- table cell; in the help text, as is.
local function path_inlines(path)
  if FORMAT == 'man' then
    local troff = path:gsub('\\', '\\\\'):gsub('%-', '\\-'):gsub('(.)/', '%1/\\:')
    return { pandoc.RawInline('man', '\\f[I]' .. troff .. '\\f[R]') }
  end
  return { pandoc.Code(path) }
end

local function Link(el)
  local target = el.target
  if target:match('^%a[%w+.-]*:') or target:match('^#') then
    return nil -- a URL, or an anchor in this page: pandoc renders it
  end
  local path = target:gsub('#.*$', '')
  local text = pandoc.utils.stringify(el.content)
  local repl
  local same = false
  if path:match('^[^/]+%.md$') then
    local ref = man_ref(path)
    if ref then
      repl = ref_inlines(ref)
      same = text == path or text == ref.name or text:gsub(' ', '-') == ref.name
    else
      repl = path_inlines(docdir .. '/' .. path)
      same = text == path
    end
  elseif path:match('^%.%./examples/') then
    local rel = path:gsub('^%.%./', '')
    repl = path_inlines(docdir .. '/' .. rel)
    same = text == rel or text == path
  else
    return el.content -- somewhere else in the tree: keep the words
  end
  if same then
    return repl
  end
  local out = pandoc.List(el.content)
  out:insert(pandoc.Space())
  out:insert(pandoc.Str('('))
  out:extend(repl)
  out:insert(pandoc.Str(')'))
  return out
end

-- Column widths for a man page's tables (the GFM reader gives none, and tbl
-- would then split the line evenly, squeezing the long "meaning" columns):
-- each column gets at least its longest word and what is left goes to the
-- columns whose text is longer, in proportion, as a browser lays out a
-- table. TEXT is the width tbl fills; GAP what it puts between columns.
local TABLE_TEXT, TABLE_GAP = 70, 3

local function table_rows(t)
  local rows = pandoc.List()
  rows:extend(t.head.rows)
  for _, body in ipairs(t.bodies) do
    rows:extend(body.head)
    rows:extend(body.body)
  end
  return rows
end

local function Table(t)
  local n = #t.colspecs
  local natural, minimum = {}, {}
  for j = 1, n do
    natural[j], minimum[j] = 1, 1
  end
  for _, row in ipairs(table_rows(t)) do
    for j, cell in ipairs(row.cells) do
      if j <= n then
        local text = pandoc.utils.stringify(cell.contents)
        natural[j] = math.max(natural[j], utf8.len(text) or #text)
        for word in text:gmatch('%S+') do
          minimum[j] = math.max(minimum[j], math.min(utf8.len(word) or #word, 30))
        end
      end
    end
  end
  local avail = TABLE_TEXT - TABLE_GAP * (n - 1)
  local sum_nat, sum_min = 0, 0
  for j = 1, n do
    sum_nat = sum_nat + natural[j]
    sum_min = sum_min + minimum[j]
  end
  local width = {}
  for j = 1, n do
    if sum_nat <= avail then
      width[j] = natural[j]
    elseif sum_min >= avail then
      width[j] = minimum[j] * avail / sum_min
    else
      width[j] = minimum[j] + (natural[j] - minimum[j]) * (avail - sum_min) / (sum_nat - sum_min)
    end
    t.colspecs[j] = { t.colspecs[j][1], width[j] / TABLE_TEXT }
  end
  -- Terminals render man pages as one long page (groff's cR register),
  -- whose length grows only on .ne: a table row that reaches its current
  -- end makes tbl (groff 1.22.4) warn that the row "will not fit on one
  -- page", where it just wants more page. Ask for room first; the page is
  -- cut back to what was printed at the end. (The plain writer of the help
  -- text drops this raw block.)
  return { pandoc.RawBlock('man', '.if \\n[cR] .ne 1000v'), t }
end

-- The title heading and the Name section become metadata.
local function take_front(doc)
  local blocks = pandoc.List()
  local i = 1
  local n = #doc.blocks
  while i <= n do
    local b = doc.blocks[i]
    if b.t == 'Header' and b.level == 1 and not doc.meta.title then
      local name, section = parse_title(pandoc.utils.stringify(b.content))
      if not name then
        io.stderr:write('manpage.lua: the first heading must be NAME(SECTION), not "' ..
          pandoc.utils.stringify(b.content) .. '"\n')
        os.exit(1)
      end
      doc.meta.title = pandoc.MetaString(name)
      doc.meta.section = pandoc.MetaString(section)
      i = i + 1
    elseif b.t == 'Header' and b.level == 2 and pandoc.utils.stringify(b.content):lower() == 'name' then
      -- The Name section: its one paragraph, "NAME — summary".
      local para = doc.blocks[i + 1]
      if para and (para.t == 'Para' or para.t == 'Plain') then
        local line = pandoc.utils.stringify(para.content)
        local summary = line:match('^[^%s]+%s+—%s+(.+)$') or line:match('^[^%s]+%s+%-%-?%s+(.+)$')
        doc.meta.summary = pandoc.MetaString(summary or line)
        doc.meta.nameline = pandoc.MetaInlines(para.content)
        i = i + 2
      else
        i = i + 1
      end
    else
      blocks:insert(b)
      i = i + 1
    end
  end
  doc.blocks = blocks
  return doc
end

-- man: ## → level 1 in capitals, ### → level 2 ...; a NAME section first.
local function to_man(doc)
  doc = doc:walk({ Table = Table })
  local blocks = pandoc.List()
  if doc.meta.title then
    local nameline = doc.meta.nameline
    local inl
    if nameline then
      -- "cloister-run — run a command": man wants "cloister-run \- run a command".
      local s = pandoc.utils.stringify(nameline)
      local summary = meta_string(doc.meta.summary) or s
      inl = { pandoc.Str(meta_string(doc.meta.title)), pandoc.Space(), pandoc.Str('-'),
        pandoc.Space(), pandoc.Str(summary) }
    else
      inl = { pandoc.Str(meta_string(doc.meta.title)) }
    end
    blocks:insert(pandoc.Header(1, { pandoc.Str('NAME') }))
    blocks:insert(pandoc.Para(inl))
  end
  for _, b in ipairs(doc.blocks) do
    if b.t == 'Header' then
      local level = b.level - 1
      if level < 1 then
        level = 1
      end
      local content = b.content
      if level == 1 then
        content = upper_inlines(content)
      end
      blocks:insert(pandoc.Header(level, content, b.attr))
    else
      blocks:insert(b)
    end
  end
  doc.blocks = blocks
  doc.meta.nameline = nil
  return doc
end

-- Each section's body as a block quote, which the plain writer indents as
-- man indents a section: the text reads the same in both.
local function indent_sections(blocks)
  local out = pandoc.List()
  local body = nil
  for _, b in ipairs(blocks) do
    if b.t == 'Header' and b.level == 1 then
      if body and #body > 0 then
        out:insert(pandoc.BlockQuote(body))
      end
      out:insert(b)
      body = pandoc.List()
    elseif body then
      body:insert(b)
    else
      out:insert(b)
    end
  end
  if body and #body > 0 then
    out:insert(pandoc.BlockQuote(body))
  end
  return out
end

-- help: keep the sections `cloister help` shows, in the page's order.
local function to_help(doc)
  doc = doc:walk({ Table = Table })
  local blocks = pandoc.List()
  local keep = false
  for _, b in ipairs(doc.blocks) do
    if b.t == 'Header' and b.level <= 2 then
      keep = help_sections[pandoc.utils.stringify(b.content):lower()] or false
      if keep then
        blocks:insert(pandoc.Header(1, upper_inlines(b.content)))
      end
    elseif keep then
      if b.t == 'Header' then
        blocks:insert(pandoc.Header(b.level - 1, b.content, b.attr))
      else
        blocks:insert(b)
      end
    end
  end
  doc.blocks = indent_sections(blocks)
  doc.meta.nameline = nil
  return doc
end

function Pandoc(doc)
  mode = meta_string(doc.meta.mode) or mode
  docdir = meta_string(doc.meta.docdir) or docdir
  local input = PANDOC_STATE.input_files[1]
  if input then
    srcdir = input:match('^(.*)/[^/]*$') or '.'
  end
  doc = doc:walk({ Link = Link })
  doc = take_front(doc)
  if mode == 'help' then
    return to_help(doc)
  end
  return to_man(doc)
end
