//===- CodeUnits.cpp - an LLVM module split into content-named units ------===//
#include "CodeUnits.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

namespace llmc {
namespace {

/// A function other units reach by its symbol: visible outside the module,
/// or with its address taken (a task the step hands to the thread pool).
bool isRoot(const llvm::Function &function) {
  return !function.isDeclaration() && (!function.hasLocalLinkage() || function.hasAddressTaken());
}

/// `llmc_matmul_task_5` -> `llmc_matmul_task`: the name without the counter
/// that lowering numbers kernels with.
llvm::StringRef stemOf(llvm::StringRef name) {
  llvm::StringRef stem = name.rtrim("0123456789");
  return stem.size() < name.size() && stem.ends_with("_") ? stem.drop_back() : name;
}

/// Calls `visit` on each function that `user`'s instructions name, directly
/// or inside constants.
void forEachReferencedFunction(const llvm::Function &user,
                               llvm::function_ref<void(llvm::Function &)> visit) {
  llvm::SmallPtrSet<const llvm::Constant *, 16> seen;
  std::function<void(llvm::Value *)> walk = [&](llvm::Value *value) {
    if (auto *function = llvm::dyn_cast<llvm::Function>(value)) return visit(*function);
    auto *constant = llvm::dyn_cast<llvm::Constant>(value);
    if (!constant || llvm::isa<llvm::GlobalValue>(constant) || !seen.insert(constant).second)
      return;
    for (llvm::Use &operand : constant->operands()) walk(operand.get());
  };
  for (const llvm::Instruction &instruction : llvm::instructions(user))
    for (const llvm::Use &operand : instruction.operands()) walk(operand.get());
}

/// A root and the local functions only it reaches, in module order, and the
/// local roots of other units that they name.
struct UnitPlan {
  llvm::SetVector<llvm::Function *> members;
  llvm::SmallPtrSet<llvm::Function *, 8> localRootsNamed;
};

UnitPlan planUnit(llvm::Function &root) {
  UnitPlan plan;
  llvm::SmallVector<llvm::Function *> worklist{&root};
  plan.members.insert(&root);
  while (!worklist.empty()) {
    llvm::Function *function = worklist.pop_back_val();
    forEachReferencedFunction(*function, [&](llvm::Function &callee) {
      if (callee.isDeclaration() || &callee == &root) return;
      if (isRoot(callee)) {
        if (callee.hasLocalLinkage()) plan.localRootsNamed.insert(&callee);
      } else if (plan.members.insert(&callee)) {
        worklist.push_back(&callee);
      }
    });
  }
  return plan;
}

std::string bitcodeOf(const llvm::Module &module) {
  std::string bitcode;
  llvm::raw_string_ostream os(bitcode);
  llvm::WriteBitcodeToFile(module, os);
  return bitcode;
}

std::string keyOf(llvm::StringRef keyPrefix, llvm::StringRef bitcode) {
  llvm::BLAKE3 hasher;
  hasher.update(keyPrefix);
  hasher.update(llvm::StringRef("\0", 1));
  hasher.update(bitcode);
  return llvm::toHex(hasher.final(), /*LowerCase=*/true);
}

CodeUnit wholeModule(const llvm::Module &module, llvm::StringRef keyPrefix) {
  std::string bitcode = bitcodeOf(module);
  return {"module", keyOf(keyPrefix, bitcode), std::move(bitcode)};
}

/// A function's symbol in another object of the same library: resolved by the
/// static linker, never exported.
void makeHidden(llvm::Function &function) {
  function.setLinkage(llvm::GlobalValue::ExternalLinkage);
  function.setVisibility(llvm::GlobalValue::HiddenVisibility);
  function.setDSOLocal(true);
}

} // namespace

std::vector<CodeUnit> splitIntoCodeUnits(llvm::Module &module, llvm::StringRef keyPrefix) {
  if (!module.global_empty() || !module.alias_empty() || !module.ifunc_empty())
    return {wholeModule(module, keyPrefix)};

  llvm::MapVector<llvm::Function *, UnitPlan> plans;
  for (llvm::Function &function : module)
    if (isRoot(function)) plans.insert({&function, planUnit(function)});
  if (plans.empty()) return {wholeModule(module, keyPrefix)};

  std::vector<CodeUnit> units;
  llvm::SmallPtrSet<llvm::Function *, 16> named;
  while (named.size() < plans.size()) {
    bool progressed = false;
    for (auto &[root, plan] : plans) {
      auto isNamed = [&](llvm::Function *function) { return named.contains(function); };
      if (isNamed(root) || !llvm::all_of(plan.localRootsNamed, isNamed)) continue;
      named.insert(root);
      progressed = true;

      llvm::ValueToValueMapTy clonedOf;
      auto inUnit = [&](const llvm::GlobalValue *value) {
        auto *function = llvm::dyn_cast<llvm::Function>(value);
        return function && plan.members.contains(const_cast<llvm::Function *>(function));
      };
      std::unique_ptr<llvm::Module> unit = llvm::CloneModule(module, clonedOf, inUnit);
      for (llvm::Function *other : plan.localRootsNamed)
        makeHidden(*llvm::cast<llvm::Function>(clonedOf[other]));
      // CloneModule declares every function of the module; the others' names
      // would make the unit's content depend on its neighbours.
      for (llvm::Function &function : llvm::make_early_inc_range(*unit))
        if (function.isDeclaration() && function.use_empty()) function.eraseFromParent();

      bool localRoot = root->hasLocalLinkage();
      auto *rootClone = llvm::cast<llvm::Function>(clonedOf[root]);
      std::string stem = stemOf(root->getName()).str();
      if (localRoot) {
        makeHidden(*rootClone);
        rootClone->setName(stem);
      }
      for (llvm::Function *member : plan.members)
        if (member != root) {
          auto *clone = llvm::cast<llvm::Function>(clonedOf[member]);
          clone->setName(stemOf(member->getName()));
        }

      std::string bitcode = bitcodeOf(*unit);
      std::string key = keyOf(keyPrefix, bitcode);
      std::string name = root->getName().str();
      if (localRoot) {
        name = stem + "_" + key.substr(0, 16);
        if (llvm::Function *same = module.getFunction(name)) {
          // The same content as a unit already kept: the callers use that one.
          root->replaceAllUsesWith(same);
          continue;
        }
        root->setName(name);
        rootClone->setName(name);
        bitcode = bitcodeOf(*unit);
      }
      units.push_back({std::move(name), std::move(key), std::move(bitcode)});
    }
    // Units that name each other cannot be named one after the other.
    if (!progressed) return {wholeModule(module, keyPrefix)};
  }
  return units;
}

} // namespace llmc
