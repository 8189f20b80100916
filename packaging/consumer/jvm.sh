#!/usr/bin/env bash
# `make dist-test`, JVM (run by packaging/consumer/run.sh): a fresh Maven
# project in $WORK_DIR depends on dev.leasehold:leasehold:$VERSION from the
# repository `make dist-jvm` wrote ($DIST/jvm/repository), with a Maven
# repository of its own, M2_REPO (default under $WORK_DIR; Maven Central for
# the rest), builds
# the README's Java example against it and runs it on the server at
# $LEASEHOLD_URL with `java`: one `fence N` line per hold. Needs Java 17 and
# Maven, no Rust. For ARCH aarch64, `java` is the arm64 root folder's
# (Debian's openjdk-17-jre-headless), under qemu: JNA finds the jar's
# linux-aarch64 library.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
MVN=${MVN:-mvn}
ARCH=${ARCH:-x86_64}
. "$(dirname "$0")/../platforms.sh"
case $ARCH in
  x86_64) java=java ;;
  aarch64) java=$ARM64_ROOT/usr/lib/jvm/java-17-openjdk-arm64/bin/java ;;
esac
mkdir -p "$WORK_DIR/consumer/src/main/java/example"
cd "$WORK_DIR/consumer"

cat >pom.xml <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumer</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository>
      <id>leasehold-dist</id>
      <url>file://$DIST/jvm/repository</url>
    </repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>dev.leasehold</groupId>
      <artifactId>leasehold</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.15.0</version>
      </plugin>
    </plugins>
  </build>
</project>
POM

cat >src/main/java/example/Main.java <<'EOF_JAVA'
// The README's ten lines of Java, made runnable: a lock on the server store
// at $LEASEHOLD_URL, "chat-1" held twice and "chat-2" tried, each fence printed.
package example;

import static java.util.concurrent.CompletableFuture.completedFuture;

import dev.leasehold.java.Attempt;
import dev.leasehold.java.Leasehold;
import dev.leasehold.java.Lock;
import dev.leasehold.java.Store;
import java.time.Duration;

public final class Main {
    public static void main(String[] args) {
        System.out.println("platform " + System.getProperty("os.arch"));
        Store store = Leasehold.connect(System.getenv("LEASEHOLD_URL")).join();
        try {
            Lock summaries = store.lock("summaries", Duration.ofSeconds(30));
            for (int i = 0; i < 2; i++) {
                summaries.hold("chat-1", lease -> {
                    System.out.println("fence " + lease.fence());
                    return completedFuture(null);
                }).join();
            }
            Attempt<Long> tried = summaries.tryHold("chat-2", lease -> {
                System.out.println("fence " + lease.fence());
                return completedFuture(lease.fence());
            }).join();
            if (!tried.ran()) {
                throw new IllegalStateException("chat-2 was held elsewhere");
            }
        } finally {
            store.close().join();
        }
    }
}
EOF_JAVA

flags=(-B -q -Dstyle.color=never -Dmaven.repo.local="${M2_REPO:-$WORK_DIR/m2}")
"$MVN" "${flags[@]}" package dependency:build-classpath -Dmdep.outputFile=classpath.txt >&2
run_on "$ARCH" "$java" -cp "target/classes:$(cat classpath.txt)" example.Main
