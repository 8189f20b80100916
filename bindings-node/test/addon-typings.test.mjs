// lib/addon.d.ts checked against the native addon it declares (built from
// src/*.rs; lib/native.js loads it): the addon's exports are the members
// of the interface `Native` and the exported classes, and each class's
// prototype methods, getters and static methods are the ones declared,
// both ways. The declarations are read with the TypeScript compiler API.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, test } from 'node:test'

import ts from 'typescript'

const require = createRequire(import.meta.url)
const typingsPath = new URL('../lib/addon.d.ts', import.meta.url)

/**
 * What a declaration file says the addon exports.
 * @typedef {object} Declared
 * @property {Map<string, 'function' | { classOf: string }>} exports the members of `Native`:
 *   a function, or a class (`typeof X`)
 * @property {Map<string, Map<string, string>>} classes each exported class's
 *   members: name (`static name` for a static one) to kind (`method`, `getter`, `setter`)
 */

/**
 * Whether `node` carries the modifier `kind`.
 * @param {ts.Node} node
 * @param {ts.SyntaxKind} kind
 */
function has(node, kind) {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind)
}

/**
 * The name of a declaration as written (an identifier or a string literal).
 * @param {ts.PropertyName | undefined} name
 * @param {ts.SourceFile} file
 */
function nameOf(name, file) {
  if (name === undefined) throw new Error('a member without a name')
  return ts.isIdentifier(name) || ts.isStringLiteral(name) ? name.text : name.getText(file)
}

/**
 * Reads a declaration file's exported classes and its interface `Native`.
 * @param {string} fileName
 * @param {string} text
 * @returns {Declared}
 */
function readDeclarations(fileName, text) {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true)
  /** @type {Declared} */
  const declared = { exports: new Map(), classes: new Map() }
  let native = false
  for (const statement of file.statements) {
    if (ts.isClassDeclaration(statement) && has(statement, ts.SyntaxKind.ExportKeyword)) {
      const className = statement.name?.text
      if (className === undefined) throw new Error(`${fileName}: an exported class without a name`)
      /** @type {Map<string, string>} */
      const members = new Map()
      for (const member of statement.members) {
        if (ts.isConstructorDeclaration(member)) continue
        const prefix = has(member, ts.SyntaxKind.StaticKeyword) ? 'static ' : ''
        const name = prefix + nameOf(member.name, file)
        if (ts.isMethodDeclaration(member)) members.set(name, 'method')
        else if (ts.isGetAccessorDeclaration(member)) members.set(name, 'getter')
        else if (ts.isSetAccessorDeclaration(member)) members.set(name, 'setter')
        else if (ts.isPropertyDeclaration(member))
          // A property of a napi class is an accessor on its prototype.
          members.set(name, has(member, ts.SyntaxKind.ReadonlyKeyword) ? 'getter' : 'getter+setter')
        else throw new Error(`${fileName}: ${className} has a member of an unknown kind`)
      }
      declared.classes.set(className, members)
    }
    if (ts.isInterfaceDeclaration(statement) && statement.name.text === 'Native') {
      native = true
      for (const member of statement.members) {
        const name = nameOf(member.name, file)
        if (ts.isMethodSignature(member)) declared.exports.set(name, 'function')
        else if (
          ts.isPropertySignature(member) &&
          member.type !== undefined &&
          ts.isTypeQueryNode(member.type)
        )
          declared.exports.set(name, { classOf: member.type.exprName.getText(file) })
        else throw new Error(`${fileName}: Native.${name} is neither a function nor a typeof class`)
      }
    }
  }
  if (!native) throw new Error(`${fileName} declares no interface Native`)
  return declared
}

/** The own properties every function has, which declare nothing. */
const FUNCTION_PROPERTIES = new Set(['length', 'name', 'prototype', 'arguments', 'caller'])

/**
 * The members of a class as the addon made it: its prototype's methods and
 * accessors, and its static ones.
 * @param {Function} value
 * @returns {Map<string, string>}
 */
function membersOf(value) {
  /** @type {Map<string, string>} */
  const members = new Map()
  /**
   * @param {object} holder
   * @param {string} prefix
   * @param {Set<string>} skip
   */
  const read = (holder, prefix, skip) => {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(holder))) {
      if (skip.has(name)) continue
      const kind = d.get && d.set ? 'getter+setter' : d.get ? 'getter' : d.set ? 'setter' : null
      members.set(prefix + name, kind ?? (typeof d.value === 'function' ? 'method' : 'value'))
    }
  }
  read(value.prototype, '', new Set(['constructor']))
  read(value, 'static ', FUNCTION_PROPERTIES)
  return members
}

/**
 * Whether `value` is a class the addon made: a function whose prototype
 * has members of its own (a plain exported function's has only `constructor`).
 * @param {unknown} value
 */
function isClass(value) {
  return (
    typeof value === 'function' &&
    value.prototype !== undefined &&
    Object.getOwnPropertyNames(value.prototype).some((n) => n !== 'constructor')
  )
}

/**
 * Every difference between `declared` and the loaded `addon`, one line each,
 * naming the export or member.
 * @param {Declared} declared
 * @param {Record<string, unknown>} addon
 * @returns {string[]}
 */
function differences(declared, addon) {
  const problems = []
  const declaredNames = new Set([...declared.exports.keys(), ...declared.classes.keys()])
  for (const name of declaredNames) {
    if (!(name in addon))
      problems.push(`${name}: declared in addon.d.ts, not exported by the addon`)
  }
  for (const name of Object.keys(addon)) {
    if (!declaredNames.has(name)) problems.push(`${name}: exported by the addon, not declared`)
  }
  for (const [name, kind] of declared.exports) {
    const value = addon[name]
    if (!(name in addon)) continue
    if (kind === 'function') {
      if (typeof value !== 'function')
        problems.push(`${name}: declared a function, is ${typeof value}`)
      else if (isClass(value)) problems.push(`${name}: declared a function, is a class`)
    } else if (kind.classOf !== name) {
      problems.push(`${name}: declared typeof ${kind.classOf}, the class of another name`)
    } else if (!declared.classes.has(name)) {
      problems.push(`${name}: declared typeof ${name}, and no class ${name} is declared`)
    }
  }
  for (const [className, members] of declared.classes) {
    const value = addon[className]
    if (!(className in addon)) continue
    if (typeof value !== 'function') {
      problems.push(`${className}: declared a class, is ${typeof value}`)
      continue
    }
    const actual = membersOf(value)
    for (const [member, kind] of members) {
      const found = actual.get(member)
      if (found === undefined) problems.push(`${className}.${member}: declared, not in the addon`)
      else if (found !== kind)
        problems.push(`${className}.${member}: declared a ${kind}, is a ${found} in the addon`)
    }
    for (const member of actual.keys()) {
      if (!members.has(member)) problems.push(`${className}.${member}: in the addon, not declared`)
    }
  }
  return problems
}

describe('lib/addon.d.ts against the native addon', () => {
  test('the addon exports what addon.d.ts declares, and nothing else', () => {
    const declared = readDeclarations(typingsPath.pathname, readFileSync(typingsPath, 'utf8'))
    const addon = require('../lib/native.js')
    assert.ok(declared.classes.size > 0 && declared.exports.size > 0, 'nothing was declared')
    assert.deepEqual(differences(declared, addon), [])
  })

  // The check itself: each kind of difference is found, naming what differs.
  test('a difference either way is named', () => {
    const declared = readDeclarations(
      'sample.d.ts',
      `export class Thing {
         constructor()
         readonly size: number
         grow(by: number): void
         static make(): Thing
         declaredOnly(): void
       }
       export class Missing {}
       export interface Native {
         Thing: typeof Thing
         Other: typeof Thing
         run(): void
         gone(): void
       }`,
    )
    class Thing {
      get size() {
        return 1
      }
      grow() {}
      extra() {}
      static make() {
        return new Thing()
      }
      static hidden() {}
    }
    const addon = { Thing, Other: Thing, run: Thing, surplus() {} }
    assert.deepEqual(differences(declared, addon).sort(), [
      'Missing: declared in addon.d.ts, not exported by the addon',
      'Other: declared typeof Thing, the class of another name',
      'Thing.declaredOnly: declared, not in the addon',
      'Thing.extra: in the addon, not declared',
      'Thing.static hidden: in the addon, not declared',
      'gone: declared in addon.d.ts, not exported by the addon',
      'run: declared a function, is a class',
      'surplus: exported by the addon, not declared',
    ])
  })
})
