//===- AnswerParser.cpp - A model's answer as a KernelPlan ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads an answer strictly. The text is split into fenced blocks; the one
// ```cuda block is lexed like C++ (comments, string and character literals,
// preprocessor lines), and its tokens are checked: allowed `#include`s and
// directives, no host code or library names, exactly one `__global__`
// kernel declared `extern "C"` with the required name and parameter types.
// The one ```json block gives the launch. Anything else is rejected with a
// reason written for the model. This is a filter for honest mistakes; the
// evaluator's isolation and checks are what stop a hostile kernel.
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/LLM/LlmProposer.h"
#include "kopt/Support/InputLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;
using namespace mlir::kopt;

static llvm::Error reject(const llvm::Twine &reason) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), reason);
}

static llvm::Error reject(const llvm::formatv_object_base &reason) {
  return reject(llvm::Twine(reason.str()));
}

//===----------------------------------------------------------------------===//
// Fenced blocks
//===----------------------------------------------------------------------===//

namespace {
struct FencedBlock {
  std::string language;
  std::string body;
};
} // namespace

/// Splits out the ``` blocks of `text`: a line starting (after blanks) with
/// three backticks opens one, with its language after them; a line of only
/// backticks closes it.
static llvm::Expected<std::vector<FencedBlock>>
getFencedBlocks(llvm::StringRef text) {
  std::vector<FencedBlock> blocks;
  std::optional<FencedBlock> open;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    llvm::StringRef trimmed = line.trim();
    if (!open) {
      if (trimmed.starts_with("```"))
        open = FencedBlock{trimmed.ltrim('`').trim().lower(), ""};
      continue;
    }
    if (trimmed.starts_with("```") && trimmed.ltrim('`').empty()) {
      blocks.push_back(std::move(*open));
      open.reset();
      continue;
    }
    open->body += line.rtrim('\r');
    open->body += '\n';
  }
  if (open)
    return reject("a ```" + open->language + " block is not closed");
  return blocks;
}

//===----------------------------------------------------------------------===//
// Lexing the source
//===----------------------------------------------------------------------===//

namespace {
struct Token {
  enum Kind { Identifier, Literal, Punct } kind;
  std::string text;
};
struct LexedSource {
  std::vector<Token> tokens;
  /// Preprocessor lines, continuation lines joined, comments removed.
  std::vector<std::string> directives;
};
} // namespace

static bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// Skips a literal quoted by `quote` starting at `i`; returns the index past
/// it, or npos when it does not end on its line.
static size_t skipQuoted(llvm::StringRef code, size_t i, char quote) {
  for (++i; i < code.size(); ++i) {
    if (code[i] == '\\') {
      ++i;
      continue;
    }
    if (code[i] == quote)
      return i + 1;
    if (code[i] == '\n')
      return llvm::StringRef::npos;
  }
  return llvm::StringRef::npos;
}

static llvm::Expected<LexedSource> lexSource(llvm::StringRef code) {
  LexedSource lexed;
  bool lineStart = true;
  size_t i = 0;
  while (i < code.size()) {
    char c = code[i];
    if (c == '\n') {
      lineStart = true;
      ++i;
      continue;
    }
    if (llvm::isSpace(c)) {
      ++i;
      continue;
    }
    if (code.substr(i).starts_with("//")) {
      i = code.find('\n', i);
      continue;
    }
    if (code.substr(i).starts_with("/*")) {
      size_t end = code.find("*/", i + 2);
      if (end == llvm::StringRef::npos)
        return reject("a /* comment is not closed");
      i = end + 2;
      continue;
    }
    if (c == '#' && lineStart) {
      std::string directive;
      while (i < code.size()) {
        size_t end = code.find('\n', i);
        llvm::StringRef line = code.slice(i, end);
        i = end == llvm::StringRef::npos ? code.size() : end + 1;
        bool continued = line.rtrim().ends_with("\\");
        directive += line.rtrim().rtrim('\\').str() + " ";
        if (!continued)
          break;
      }
      llvm::StringRef text(directive);
      text = text.take_front(std::min(text.find("//"), text.find("/*")));
      lexed.directives.push_back(text.trim().str());
      lineStart = true;
      continue;
    }
    lineStart = false;
    if (isIdentifierStart(c)) {
      size_t end = i;
      while (end < code.size() && isIdentifierChar(code[end]))
        ++end;
      llvm::StringRef word = code.slice(i, end);
      // Raw string literals: R"delim( ... )delim".
      if (end < code.size() && code[end] == '"' &&
          (word == "R" || word == "LR" || word == "uR" || word == "UR" ||
           word == "u8R")) {
        size_t paren = code.find('(', end);
        if (paren == llvm::StringRef::npos)
          return reject("a raw string literal is malformed");
        std::string close = ")" + code.slice(end + 1, paren).str() + "\"";
        size_t last = code.find(close, paren);
        if (last == llvm::StringRef::npos)
          return reject("a raw string literal is not closed");
        lexed.tokens.push_back(
            {Token::Literal, code.slice(i, last + close.size()).str()});
        i = last + close.size();
        continue;
      }
      if (end < code.size() && (code[end] == '"' || code[end] == '\'') &&
          (word == "L" || word == "u" || word == "U" || word == "u8")) {
        size_t past = skipQuoted(code, end, code[end]);
        if (past == llvm::StringRef::npos)
          return reject("a string or character literal is not closed");
        lexed.tokens.push_back({Token::Literal, code.slice(i, past).str()});
        i = past;
        continue;
      }
      lexed.tokens.push_back({Token::Identifier, word.str()});
      i = end;
      continue;
    }
    if (llvm::isDigit(c) ||
        (c == '.' && i + 1 < code.size() && llvm::isDigit(code[i + 1]))) {
      size_t end = i + 1;
      while (end < code.size() &&
             (isIdentifierChar(code[end]) || code[end] == '.' ||
              code[end] == '\'' ||
              ((code[end] == '+' || code[end] == '-') &&
               llvm::StringRef("eEpP").contains(code[end - 1]))))
        ++end;
      lexed.tokens.push_back({Token::Literal, code.slice(i, end).str()});
      i = end;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t past = skipQuoted(code, i, c);
      if (past == llvm::StringRef::npos)
        return reject("a string or character literal is not closed");
      lexed.tokens.push_back({Token::Literal, code.slice(i, past).str()});
      i = past;
      continue;
    }
    if (code.substr(i).starts_with("<<<")) {
      lexed.tokens.push_back({Token::Punct, "<<<"});
      i += 3;
      continue;
    }
    lexed.tokens.push_back({Token::Punct, std::string(1, c)});
    ++i;
  }
  return lexed;
}

//===----------------------------------------------------------------------===//
// Checking the source
//===----------------------------------------------------------------------===//

/// Why `identifier` may not appear in a kernel source, or empty.
static std::string getForbiddenReason(llvm::StringRef identifier) {
  static const llvm::StringSet<> host = {
      "__host__", "__managed__", "malloc", "calloc", "realloc", "free",
      "printf",   "new",         "delete", "fopen",  "exit",    "abort"};
  if (host.contains(identifier) || identifier.starts_with("cuda"))
    return "host code is not allowed (found `" + identifier.str() + "`)";
  static const llvm::StringSet<> libraries = {
      "thrust", "cub", "cooperative_groups", "cutlass", "cute", "nvcuda"};
  for (llvm::StringRef prefix : {"cublas", "cudnn", "cufft", "curand",
                                 "cusparse", "cusolver", "nvrtc", "nccl"})
    if (identifier.starts_with(prefix))
      return "library calls are not allowed (found `" + identifier.str() + "`)";
  if (libraries.contains(identifier))
    return "library calls are not allowed (found `" + identifier.str() + "`)";
  return "";
}

static llvm::Error checkDirective(llvm::StringRef directive) {
  llvm::StringRef rest = directive.drop_front().ltrim();
  llvm::StringRef name = rest.take_while(isIdentifierChar);
  rest = rest.drop_front(name.size()).trim();
  if (name == "include") {
    if (rest == "<cuda_fp16.h>" || rest == "\"cuda_fp16.h\"" ||
        rest == "<cuda_bf16.h>" || rest == "\"cuda_bf16.h\"")
      return llvm::Error::success();
    return reject("`#include " + rest +
                  "` is not allowed; only <cuda_fp16.h> and <cuda_bf16.h> "
                  "may be included");
  }
  static const llvm::StringSet<> allowed = {
      "define", "undef", "pragma", "if",    "ifdef",
      "ifndef", "elif",  "else",   "endif", ""};
  if (!allowed.contains(name))
    return reject("the directive `#" + name + "` is not allowed");
  // Macros may not smuggle in what the code itself may not say.
  for (size_t i = 0; i < rest.size();) {
    if (!isIdentifierStart(rest[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < rest.size() && isIdentifierChar(rest[end]))
      ++end;
    std::string reason = getForbiddenReason(rest.slice(i, end));
    if (!reason.empty())
      return reject(reason);
    i = end;
  }
  if (rest.contains("##"))
    return reject("token pasting (##) is not allowed");
  return llvm::Error::success();
}

static std::string joinTokens(llvm::ArrayRef<Token> tokens) {
  std::vector<std::string> words;
  for (const Token &token : tokens)
    words.push_back(token.text);
  return llvm::join(words, " ");
}

/// Skips `__launch_bounds__(...)` at `index`, if there.
static llvm::Error skipLaunchBounds(llvm::ArrayRef<Token> tokens,
                                    size_t &index) {
  if (index >= tokens.size() || tokens[index].text != "__launch_bounds__")
    return llvm::Error::success();
  ++index;
  if (index >= tokens.size() || tokens[index].text != "(")
    return reject("__launch_bounds__ needs its arguments in parentheses");
  int depth = 0;
  for (; index < tokens.size(); ++index) {
    if (tokens[index].text == "(")
      ++depth;
    else if (tokens[index].text == ")" && --depth == 0) {
      ++index;
      return llvm::Error::success();
    }
  }
  return reject("__launch_bounds__( is not closed");
}

/// Checks the one kernel's declaration at `tokens[global]` (`__global__`).
static llvm::Error checkKernel(llvm::ArrayRef<Token> tokens, size_t global,
                               const KernelTask &task) {
  std::string entry = getLlmEntryName(task);
  std::string required = "extern \"C\" __global__ void " + entry + "(" +
                         getLlmParameterList(task) + ")";
  if (global < 2 || tokens[global - 2].text != "extern" ||
      tokens[global - 1].text != "\"C\"")
    return reject("the kernel must be declared `" + required + "`");
  size_t index = global + 1;
  if (llvm::Error error = skipLaunchBounds(tokens, index))
    return error;
  if (index >= tokens.size() || tokens[index].text != "void")
    return reject("the kernel must return void: `" + required + "`");
  ++index;
  if (llvm::Error error = skipLaunchBounds(tokens, index))
    return error;
  if (index >= tokens.size() || tokens[index].kind != Token::Identifier)
    return reject("the kernel has no name; declare it `" + required + "`");
  if (tokens[index].text != entry)
    return reject("the kernel is named `" + tokens[index].text +
                  "`; it must be named `" + entry + "`: `" + required + "`");
  ++index;
  if (index >= tokens.size() || tokens[index].text != "(")
    return reject("the kernel has no parameter list; declare it `" + required +
                  "`");
  // Split the parameters at top-level commas.
  std::vector<std::vector<Token>> parameters(1);
  int depth = 0;
  for (++index; index < tokens.size(); ++index) {
    const Token &token = tokens[index];
    if (token.text == "(" || token.text == "[" || token.text == "<")
      ++depth;
    if ((token.text == ")" || token.text == "]" || token.text == ">") &&
        depth > 0) {
      --depth;
    } else if (token.text == ")") {
      break;
    }
    if (token.text == "," && depth == 0)
      parameters.emplace_back();
    else
      parameters.back().push_back(token);
  }
  if (index >= tokens.size())
    return reject("the kernel's parameter list is not closed");
  if (parameters.size() == 1 && parameters[0].empty())
    parameters.clear();

  std::vector<const TensorSpec *> tensors;
  for (const TensorSpec &input : task.inputs)
    tensors.push_back(&input);
  for (const TensorSpec &output : task.outputs)
    tensors.push_back(&output);
  if (parameters.size() != tensors.size())
    return reject(llvm::formatv("the kernel has {0} parameter(s); it must "
                                "have {1}: `{2}`",
                                parameters.size(), tensors.size(), required));
  for (size_t k = 0; k < tensors.size(); ++k) {
    bool isInput = k < task.inputs.size();
    std::string type =
        ((isInput ? "const " : "") +
         getCudaStorageType(tensors[k]->elementType) + " *__restrict__")
            .str();
    std::vector<Token> &parameter = parameters[k];
    auto expected = lexSource(type);
    if (!expected)
      return expected.takeError();
    bool named =
        !parameter.empty() && parameter.back().kind == Token::Identifier;
    std::vector<Token> given = parameter;
    if (named)
      given.pop_back();
    auto same = [](const std::vector<Token> &a, const std::vector<Token> &b) {
      if (a.size() != b.size())
        return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].text != b[i].text)
          return false;
      return true;
    };
    if (!named || !same(given, expected->tokens))
      return reject(llvm::formatv(
          "parameter {0} of the kernel is `{1}`; it must be `{2} {3}` ({4} "
          "{5}): `{6}`",
          k + 1, joinTokens(parameter), type, tensors[k]->name,
          isInput ? "input" : "output", tensors[k]->name, required));
  }
  ++index;
  if (index >= tokens.size() || tokens[index].text != "{")
    return reject("the kernel has no body; define it in the ```cuda block");
  return llvm::Error::success();
}

static llvm::Error checkSource(llvm::StringRef code, const KernelTask &task) {
  if (code.trim().empty())
    return reject("the ```cuda block is empty");
  if (code.contains('\0'))
    return reject("the code holds a NUL character");
  auto lexed = lexSource(code);
  if (!lexed)
    return lexed.takeError();
  for (const std::string &directive : lexed->directives)
    if (llvm::Error error = checkDirective(directive))
      return error;
  std::vector<size_t> globals;
  for (size_t i = 0; i < lexed->tokens.size(); ++i) {
    const Token &token = lexed->tokens[i];
    if (token.kind == Token::Punct && token.text == "<<<")
      return reject("host code is not allowed (found a kernel launch `<<<`)");
    if (token.kind != Token::Identifier)
      continue;
    if (token.text == "main" && i + 1 < lexed->tokens.size() &&
        lexed->tokens[i + 1].text == "(")
      return reject("host code is not allowed (found `main(`)");
    std::string reason = getForbiddenReason(token.text);
    if (!reason.empty())
      return reject(reason);
    if (token.text == "__global__")
      globals.push_back(i);
  }
  std::string required = "extern \"C\" __global__ void " +
                         getLlmEntryName(task) + "(" +
                         getLlmParameterList(task) + ")";
  if (globals.empty())
    return reject("the code has no __global__ kernel; write exactly one, `" +
                  required + "`");
  if (globals.size() > 1)
    return reject(llvm::formatv("the code has {0} __global__ kernels; write "
                                "exactly one, `{1}`",
                                globals.size(), required));
  return checkKernel(lexed->tokens, globals.front(), task);
}

//===----------------------------------------------------------------------===//
// The launch block
//===----------------------------------------------------------------------===//

static llvm::Expected<std::array<std::string, 3>>
readDimensions(const llvm::json::Object &launch, llvm::StringRef key) {
  const llvm::json::Array *array = launch.getArray(key);
  if (!array)
    return reject("the launch block has no \"" + key +
                  "\" array of one to three sizes");
  if (array->empty() || array->size() > 3)
    return reject("the launch block's \"" + key +
                  "\" must have one to three entries");
  std::array<std::string, 3> dimensions = {"1", "1", "1"};
  for (size_t i = 0; i < array->size(); ++i) {
    const llvm::json::Value &value = (*array)[i];
    if (std::optional<int64_t> number = value.getAsInteger())
      dimensions[i] = std::to_string(*number);
    else if (std::optional<llvm::StringRef> text = value.getAsString();
             text && !text->trim().empty())
      dimensions[i] = text->trim().str();
    else
      return reject("the launch block's \"" + key +
                    "\" entries must be integers or expression strings");
  }
  return dimensions;
}

static llvm::Error readLaunch(llvm::StringRef body, LaunchStep &launch) {
  auto parsed = parseJson(body);
  if (!parsed)
    return reject("the ```json launch block is not valid JSON: " +
                  llvm::toString(parsed.takeError()));
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return reject("the ```json launch block must be a JSON object with "
                  "\"grid\", \"block\" and \"shared_bytes\"");
  for (const auto &member : *object)
    if (member.first != "grid" && member.first != "block" &&
        member.first != "shared_bytes")
      return reject("the launch block has an unknown key \"" +
                    llvm::StringRef(member.first) +
                    "\"; only \"grid\", \"block\" and \"shared_bytes\" are "
                    "allowed");
  auto grid = readDimensions(*object, "grid");
  if (!grid)
    return grid.takeError();
  auto block = readDimensions(*object, "block");
  if (!block)
    return block.takeError();
  launch.grid = *grid;
  launch.block = *block;
  launch.sharedBytes = 0;
  if (const llvm::json::Value *shared = object->get("shared_bytes")) {
    std::optional<int64_t> bytes = shared->getAsInteger();
    if (!bytes || *bytes < 0)
      return reject("the launch block's \"shared_bytes\" must be a "
                    "non-negative integer");
    launch.sharedBytes = *bytes;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// parseAnswer
//===----------------------------------------------------------------------===//

llvm::Expected<KernelPlan>
mlir::kopt::parseAnswer(llvm::StringRef text, const KernelTask &task,
                        const AnswerOptions &options) {
  if (text.size() > options.maxAnswerBytes)
    return reject(llvm::formatv("the answer has {0} bytes, more than the {1} "
                                "allowed",
                                text.size(), options.maxAnswerBytes));
  if (!llvm::json::isUTF8(text))
    return reject("the answer is not valid UTF-8");
  auto blocks = getFencedBlocks(text);
  if (!blocks)
    return blocks.takeError();
  std::vector<const FencedBlock *> code, launches;
  for (const FencedBlock &block : *blocks) {
    if (block.language == "cuda")
      code.push_back(&block);
    else if (block.language == "json")
      launches.push_back(&block);
  }
  if (code.empty()) {
    std::string others;
    for (const FencedBlock &block : *blocks)
      if (block.language != "json")
        others += " ```" + (block.language.empty() ? "" : block.language);
    return reject(
        "the answer has no ```cuda code block" +
        (others.empty() ? std::string() : " (found only" + others + ")"));
  }
  if (code.size() > 1)
    return reject(llvm::formatv("the answer has {0} ```cuda code blocks; give "
                                "exactly one with the whole source",
                                code.size()));
  if (launches.empty())
    return reject("the answer has no ```json launch block");
  if (launches.size() > 1)
    return reject(llvm::formatv("the answer has {0} ```json blocks; give "
                                "exactly one launch block",
                                launches.size()));
  llvm::StringRef source = code.front()->body;
  if (llvm::Error error = checkSource(source, task))
    return std::move(error);

  KernelPlan plan;
  plan.taskKey = task.key;
  plan.proposer = "llm";
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(source.data()), source.size()));
  plan.variant =
      "llm-" + llvm::toHex(llvm::ArrayRef<uint8_t>(hash).take_front(4),
                           /*LowerCase=*/true);
  plan.sources.push_back({"llm", source.str()});
  PlanStep step;
  step.kind = PlanStep::Kind::Launch;
  step.comment = "fused kernel proposed by a model";
  step.launch.source = "llm";
  step.launch.entry = getLlmEntryName(task);
  for (const TensorSpec &input : task.inputs)
    step.launch.args.push_back(input.name);
  for (const TensorSpec &output : task.outputs)
    step.launch.args.push_back(output.name);
  if (llvm::Error error = readLaunch(launches.front()->body, step.launch))
    return std::move(error);
  plan.steps.push_back(std::move(step));
  if (llvm::Error error = toLlvmError(verifyPlan(plan, task)))
    return reject("the launch block is invalid: " +
                  llvm::toString(std::move(error)));
  return plan;
}
